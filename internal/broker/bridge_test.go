package broker

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

func TestExported(t *testing.T) {
	prefixes := []string{"deploy", "ci/", "team:"}
	for topic, want := range map[string]bool{
		"deploy": true, "deploy/api": true, "deploy:x": true, "deploy.y": true, "deployment": false,
		"ci/build": true, "ci": false, "team:a": true, "private/plan": false, "": false,
	} {
		if got := exported(topic, prefixes); got != want {
			t.Errorf("exported(%q) = %v, want %v", topic, got, want)
		}
	}
	if exported("deploy", nil) {
		t.Errorf("nothing is exported by default")
	}
}

// Pages hold about the budget each, a big topic continues on the next page
// under its name, and reading every page gives back everything once.
func TestPageTopics(t *testing.T) {
	big := strings.Repeat("x", 1000)
	var all []wire.TopicInfo
	for i, n := range []int{1, 30, 0, 5} {
		ti := wire.TopicInfo{Topic: string(rune('a' + i)), Subscribers: []wire.TopicSubscriber{{SessionID: "s", Name: "s"}}}
		for j := range n {
			ti.Records = append(ti.Records, wire.TopicRecord{Topic: ti.Topic, Message: big, Seq: uint64(j)})
		}
		all = append(all, ti)
	}
	var got []wire.TopicInfo
	offset, pages := 0, 0
	for {
		page, next := pageTopics(all, offset, 5000)
		pages++
		data, _ := json.Marshal(page)
		if len(data) > 5000+1200 {
			t.Fatalf("page %d is %d bytes", pages, len(data))
		}
		for _, ti := range page {
			if n := len(got); n > 0 && got[n-1].Topic == ti.Topic {
				got[n-1].Records = append(got[n-1].Records, ti.Records...)
				got[n-1].Subscribers = append(got[n-1].Subscribers, ti.Subscribers...)
				continue
			}
			got = append(got, ti)
		}
		if next == 0 {
			break
		}
		if next <= offset {
			t.Fatalf("next offset %d after %d", next, offset)
		}
		offset = next
	}
	if pages < 7 || len(got) != len(all) {
		t.Fatalf("%d pages, %d topics back", pages, len(got))
	}
	for i := range all {
		if len(got[i].Records) != len(all[i].Records) || len(got[i].Subscribers) != 1 {
			t.Errorf("topic %s: %d records, %d subscribers back", all[i].Topic, len(got[i].Records), len(got[i].Subscribers))
		}
	}
	if page, next := pageTopics(all, 10000, 5000); len(page) != 0 || next != 0 {
		t.Errorf("past the end: %v, %d", page, next)
	}
}

func TestCleanRemoteRows(t *testing.T) {
	good := wire.Session{ID: "0123456789abcdef", Name: "w1", Cwd: "/w", Status: "idle", State: wire.StateIdle, Queued: -5, Project: "/secret", Self: true}
	rows := []wire.Session{good}
	for _, bad := range []func(*wire.Session){
		func(s *wire.Session) { s.Name = "evil\x1b[2J" },
		func(s *wire.Session) { s.Name = "a\nb" },
		func(s *wire.Session) { s.ID = "short" },
		func(s *wire.Session) { s.ID = "0123456789abcdef@gamma" },
		func(s *wire.Session) { s.Cwd = "/x\x1b" },
		func(s *wire.Session) { s.Status = "pwned" },
		func(s *wire.Session) { s.State = "root" },
		func(s *wire.Session) { s.Host = "gamma" },
	} {
		s := good
		s.ID = "fedcba9876543210"
		bad(&s)
		rows = append(rows, s)
	}
	rows = append(rows, good) // a duplicate id
	out, dropped := cleanRemoteRows(rows, 10)
	if len(out) != 1 || dropped != len(rows)-1 || out[0].Project != "" || out[0].Self || out[0].Queued != 0 {
		t.Fatalf("kept %+v, dropped %d", out, dropped)
	}
	many := make([]wire.Session, 50)
	for i := range many {
		many[i] = good
		many[i].ID = strings.Repeat("a", 15) + string(rune('A'+i))
	}
	if out, _ := cleanRemoteRows(many, 20); len(out) != 20 {
		t.Fatalf("cap: kept %d of 50, want 20", len(out))
	}
}

func TestValidRemoteMessage(t *testing.T) {
	base := func() wire.Message {
		return wire.Message{ID: "m1", From: wire.Peer{ID: "0123456789abcdef", Name: "mallory", Cwd: "/m"}, To: "a1", Text: "hi", Delivery: wire.DeliverySteer, SentAt: time.Now()}
	}
	if _, err := validRemoteMessage("beta", base()); err != nil {
		t.Fatalf("control: %v", err)
	}
	relayed := base()
	relayed.From = wire.Peer{ID: "0123456789abcdef@alpha", Name: "planner@alpha"}
	relayed.Topic, relayed.Event = "deploy", wire.EventBlocker
	if _, err := validRemoteMessage("delta", relayed); err != nil {
		t.Fatalf("control: a wake-up relayed by the topic's host: %v", err)
	}
	for what, change := range map[string]func(*wire.Message){
		"ESC in a wake-up":       func(m *wire.Message) { m.Topic, m.Event, m.Text = "t", wire.EventBlocker, "\x1b[2J" },
		"bogus delivery":         func(m *wire.Message) { m.Delivery = "bogus" },
		"exec attachment":        func(m *wire.Message) { m.Attachments = []wire.Attachment{{Type: "exec", Name: "x"}} },
		"a 70 KB id":             func(m *wire.Message) { m.ID = strings.Repeat("x", 70<<10) },
		"an id with @":           func(m *wire.Message) { m.ID = "m1@gamma" },
		"a name with a newline":  func(m *wire.Message) { m.From.Name = "a\nb" },
		"a cwd with ESC":         func(m *wire.Message) { m.From.Cwd = "/x\x1b" },
		"a third host's sender":  func(m *wire.Message) { m.From.ID = "0123456789abcdef@gamma" },
		"a third host's target":  func(m *wire.Message) { m.To = "a1@gamma" },
		"an update wake-up":      func(m *wire.Message) { m.Topic, m.Event = "t", wire.EventUpdate },
		"a third host's topic":   func(m *wire.Message) { m.Topic, m.Event = "t@gamma", wire.EventBlocker },
		"an event without topic": func(m *wire.Message) { m.Event = wire.EventRelease },
		"too large":              func(m *wire.Message) { m.Text = strings.Repeat("a", wire.MaxMessageBytes+1) },
		"empty":                  func(m *wire.Message) { m.Text = "" },
	} {
		m := base()
		change(&m)
		if _, err := validRemoteMessage("beta", m); err == nil {
			t.Errorf("%s: accepted", what)
		}
	}
}

func TestLedgerCounts(t *testing.T) {
	l := newLedger()
	remote := &wire.Message{From: wire.Peer{ID: "0123456789abcdef@beta"}, Text: "12345"}
	local := &wire.Message{From: wire.Peer{ID: "0123456789abcdef"}, Text: "x"}
	notice := &wire.Message{From: wire.Peer{ID: noticeSender + "@beta"}, Text: "x"}
	l.stored(store.InboxSlot("s1", 1), remote)
	l.stored(store.InboxSlot("s1", 2), local)
	l.stored(store.InboxSlot("s1", 3), notice)
	l.stored(store.OutboxSlot("beta", 4), local)
	if l.queued["s1"] != 3 || l.outbox["beta"] != 1 || l.hosts["beta"].messages != 1 || l.hosts["beta"].bytes != 5 {
		t.Fatalf("after storing: %+v %+v %+v", l.queued, l.outbox, l.hosts["beta"])
	}
	l.removed(store.InboxSlot("s1", 1))
	l.removed(store.OutboxSlot("beta", 4))
	if l.queued["s1"] != 2 || l.outbox["beta"] != 0 || l.hosts["beta"].messages != 0 || l.hosts["beta"].bytes != 0 {
		t.Fatalf("after removing: %+v %+v %+v", l.queued, l.outbox, l.hosts["beta"])
	}
	l.stored(store.InboxSlot("s2", 5), remote)
	l.dropSession("s2")
	if _, ok := l.queued["s2"]; ok || l.hosts["beta"].messages != 0 {
		t.Fatalf("after dropping s2: %+v %+v", l.queued, l.hosts["beta"])
	}
}
