package store

import (
	"fmt"
	"sort"
	"testing"

	"github.com/intercom-dev/intercom/pkg/wire"
)

func putTopics(t *testing.T, s *Store) {
	t.Helper()
	update(t, s, func(txn *Txn) error {
		for _, r := range []struct{ topic, sid, msg string }{
			{"t", "s1", "one"}, {"t", "s2@h", "two"}, {"tt", "s1", "three"}, {"u", "xs1", "four"},
		} {
			if err := txn.PutTopicRecord(r.sid, TopicRecord{Topic: r.topic, From: wire.Peer{ID: r.sid}, Message: r.msg}); err != nil {
				return err
			}
		}
		for _, sub := range []Subscription{{Topic: "t", SessionID: "s1"}, {Topic: "t", SessionID: "s3@h", AwaitRelease: true}, {Topic: "u", SessionID: "s4"}} {
			if err := txn.PutSubscription(sub); err != nil {
				return err
			}
		}
		return txn.Set(topicRecordKey("t", "bad"), []byte("{"))
	})
}

// TestTopicRecordsAndSubscriptions: a topic's records and subscriptions
// read apart from a topic that shares its prefix; "" reads every topic; an
// unreadable record is skipped.
func TestTopicRecordsAndSubscriptions(t *testing.T) {
	t.Parallel()
	s, _ := openTemp(t)
	putTopics(t, s)
	_ = s.View(func(txn *Txn) error {
		for _, c := range []struct{ topic, recs, subs string }{
			{"t", "[s1:one s2@h:two]", "[s1 s3@h]"},
			{"tt", "[s1:three]", "[]"},
			{"", "[s1:one s2@h:two s1:three xs1:four]", "[s1 s3@h s4]"},
			{"v", "[]", "[]"},
		} {
			recs, subs := []string{}, []string{}
			if err := txn.ScanTopicRecords(c.topic, func(sid string, r TopicRecord) { recs = append(recs, sid+":"+r.Message) }); err != nil {
				t.Fatal(err)
			}
			if err := txn.ScanSubscriptions(c.topic, func(s Subscription) { subs = append(subs, s.SessionID) }); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(recs) != c.recs || fmt.Sprint(subs) != c.subs {
				t.Errorf("topic %q: records %v subs %v; want %s %s", c.topic, recs, subs, c.recs, c.subs)
			}
		}
		for _, c := range []struct {
			topic, sid string
			ok         bool
		}{{"t", "s1", true}, {"t", "s3", false}, {"t", "bad", false}, {"tt", "s2@h", false}} {
			if r, ok, err := txn.TopicRecord(c.topic, c.sid); ok != c.ok || err != nil || (ok && r.From.ID != c.sid) {
				t.Errorf("TopicRecord(%s, %s) = %+v, %v, %v; want ok %v", c.topic, c.sid, r, ok, err, c.ok)
			}
		}
		for _, c := range []struct {
			topic, sid string
			want       bool
		}{{"t", "s1", true}, {"t", "s4", false}, {"u", "s4", true}} {
			if got, err := txn.Subscribed(c.topic, c.sid); got != c.want || err != nil {
				t.Errorf("Subscribed(%s, %s) = %v, %v", c.topic, c.sid, got, err)
			}
		}
		for _, c := range []struct {
			sid  string
			want bool
		}{{"s1", true}, {"s4", true}, {"s2@h", true}, {"1", false}, {"4", false}, {"s9", false}} {
			if got := txn.HasTopicState(c.sid); got != c.want {
				t.Errorf("HasTopicState(%s) = %v, want %v", c.sid, got, c.want)
			}
		}
		var subs []string
		txn.EachSubscriber(func(sid string) { subs = append(subs, sid) })
		if fmt.Sprint(subs) != "[s1 s3@h s4]" {
			t.Errorf("EachSubscriber = %v", subs)
		}
		return nil
	})
}

// TestTopicStateDropped: a session's subscriptions go with
// DeleteSubscriptionsOf; the refs of a host's sessions name their records
// and subscriptions, and deleting them returns the records.
func TestTopicStateDropped(t *testing.T) {
	t.Parallel()
	s, _ := openTemp(t)
	putTopics(t, s)
	update(t, s, func(txn *Txn) error { return txn.DeleteSubscriptionsOf("s1") })
	var refs []TopicRef
	_ = s.View(func(txn *Txn) error {
		if ok, _ := txn.Subscribed("t", "s1"); ok {
			t.Error("s1's subscription kept")
		}
		if _, ok, _ := txn.TopicRecord("t", "s1"); !ok {
			t.Error("s1's record dropped with its subscriptions")
		}
		refs = txn.TopicRefs(func(sid string) bool { return len(sid) > 2 && sid[len(sid)-2:] == "@h" })
		return nil
	})
	want := []TopicRef{{Topic: "t", Session: "s2@h", Record: true}, {Topic: "t", Session: "s3@h"}}
	if fmt.Sprint(refs) != fmt.Sprint(want) {
		t.Fatalf("TopicRefs = %v, want %v", refs, want)
	}
	var gone []string
	update(t, s, func(txn *Txn) error {
		gone = gone[:0]
		for _, ref := range append(refs, TopicRef{Topic: "t", Session: "nobody"}) {
			r, found, err := txn.DeleteTopicRef(ref)
			if err != nil {
				return err
			}
			if found {
				gone = append(gone, ref.Session+":"+r.Message)
			}
		}
		return nil
	})
	sort.Strings(gone)
	if fmt.Sprint(gone) != "[s2@h:two s3@h:]" {
		t.Errorf("deleted %v", gone)
	}
	_ = s.View(func(txn *Txn) error {
		if left := txn.TopicRefs(func(sid string) bool { return sid == "s2@h" || sid == "s3@h" }); len(left) != 0 {
			t.Errorf("left %v", left)
		}
		return nil
	})
}
