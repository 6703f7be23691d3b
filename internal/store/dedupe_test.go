package store

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestDedupeRemembersRetries: a send's client id, an ack of an unstored
// id and a publication's client id are found again, each in its own
// namespace, and not under another scope or session.
func TestDedupeRemembersRetries(t *testing.T) {
	t.Parallel()
	s, _ := openTemp(t)
	sent := ClientID{Scope: "s1", ID: "c1"}
	update(t, s, func(txn *Txn) error {
		if err := txn.PutSent(sent, "m1", time.Hour); err != nil {
			return err
		}
		if err := txn.PutSent(ClientID{Scope: "h1@beta", ID: "x"}, "m2", time.Hour); err != nil {
			return err
		}
		if err := txn.PutAcked("s1", "m9", time.Hour); err != nil {
			return err
		}
		if err := txn.PutPublished("s1", "c1", 42, time.Hour); err != nil {
			return err
		}
		return txn.Set(publishDedupeKey("s1", "bad"), []byte("x"))
	})
	_ = s.View(func(txn *Txn) error {
		for _, c := range []struct {
			c    ClientID
			want string
			err  error
		}{
			{sent, "m1", nil},
			{ClientID{Scope: "s2", ID: "c1"}, "", ErrNotFound},
			{ClientID{Scope: "s1", ID: "c2"}, "", ErrNotFound},
		} {
			if id, err := txn.SentID(c.c); id != c.want || !errors.Is(err, c.err) {
				t.Errorf("SentID(%+v) = %q, %v; want %q, %v", c.c, id, err, c.want, c.err)
			}
		}
		for _, c := range []struct {
			sid, id string
			want    bool
		}{{"s1", "m9", true}, {"s2", "m9", false}, {"s1", "m1", false}} {
			if got, err := txn.Acked(c.sid, c.id); got != c.want || err != nil {
				t.Errorf("Acked(%s, %s) = %v, %v; want %v", c.sid, c.id, got, err, c.want)
			}
		}
		for _, c := range []struct {
			sender, id string
			want       uint64
			err        error
		}{{"s1", "c1", 42, nil}, {"s2", "c1", 0, ErrNotFound}, {"s1", "bad", 0, ErrUnreadable}} {
			if got, err := txn.PublishedSeq(c.sender, c.id); got != c.want || !errors.Is(err, c.err) {
				t.Errorf("PublishedSeq(%s, %s) = %d, %v; want %d, %v", c.sender, c.id, got, err, c.want, c.err)
			}
		}
		var scopes []string
		txn.EachSentScope(func(scope string) { scopes = append(scopes, scope) })
		if fmt.Sprint(scopes) != "[h1@beta s1]" {
			t.Errorf("EachSentScope = %v", scopes)
		}
		return nil
	})
	if !(ClientID{}).IsZero() || sent.IsZero() {
		t.Error("ClientID.IsZero")
	}
}
