package store

import (
	"testing"
	"time"
)

// TestSessionRecords: a record is stored, replaced, read back and deleted;
// an unreadable one is skipped.
func TestSessionRecords(t *testing.T) {
	t.Parallel()
	s, _ := openTemp(t)
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	update(t, s, func(txn *Txn) error {
		for _, r := range []SessionRecord{
			{ID: "s1", Name: "old"},
			{ID: "s1", Name: "alice", Cwd: "/w", Project: "p", Model: "m", Created: at, LastSeen: at.Add(time.Hour), Mailed: true},
			{ID: "s2", Name: "bob"},
			{ID: "s3", Name: "carol"},
		} {
			if err := txn.PutSession(r); err != nil {
				return err
			}
		}
		if err := txn.Set(sessionKey("bad"), []byte("{")); err != nil {
			return err
		}
		return txn.DeleteSession("s3")
	})
	got := map[string]SessionRecord{}
	_ = s.View(func(txn *Txn) error {
		return txn.ScanSessions(func(r SessionRecord) { got[r.ID] = r })
	})
	want := map[string]SessionRecord{
		"s1": {ID: "s1", Name: "alice", Cwd: "/w", Project: "p", Model: "m", Created: at, LastSeen: at.Add(time.Hour), Mailed: true},
		"s2": {ID: "s2", Name: "bob"},
	}
	if len(got) != len(want) {
		t.Fatalf("sessions %v, want %v", got, want)
	}
	for id, w := range want {
		g := got[id]
		if g.ID != w.ID || g.Name != w.Name || g.Cwd != w.Cwd || g.Project != w.Project || g.Model != w.Model ||
			!g.Created.Equal(w.Created) || !g.LastSeen.Equal(w.LastSeen) || g.Mailed != w.Mailed {
			t.Errorf("session %s = %+v, want %+v", id, g, w)
		}
	}
}
