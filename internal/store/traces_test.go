package store

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// TestTracesAndEvents: a kept trace reads back, an absent or unreadable one
// says so; events read per message, pushes apart from fetches, oldest
// first.
func TestTracesAndEvents(t *testing.T) {
	t.Parallel()
	s, _ := openTemp(t)
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	kept := Trace{From: wire.Peer{ID: "s1", Name: "a"}, To: "s2", Stored: at, Pushed: []time.Time{at}, Acked: at.Add(time.Second)}
	update(t, s, func(txn *Txn) error {
		if err := txn.PutTrace("m1", kept, time.Hour); err != nil {
			return err
		}
		for _, e := range []struct {
			id    string
			d     time.Duration
			fetch bool
		}{{"m1", 3, false}, {"m1", 1, false}, {"m1", 2, true}, {"m12", 4, false}} {
			if err := txn.PutTraceEvent(e.id, at.Add(e.d*time.Millisecond), e.fetch, time.Hour); err != nil {
				return err
			}
		}
		return txn.Set(traceKey("bad"), []byte("{"))
	})
	_ = s.View(func(txn *Txn) error {
		for _, c := range []struct {
			id   string
			err  error
			kept bool
		}{{"m1", nil, true}, {"m2", ErrNotFound, false}, {"bad", ErrUnreadable, true}} {
			tr, err := txn.Trace(c.id)
			if !errors.Is(err, c.err) || (err == nil && (tr.To != "s2" || !tr.Acked.Equal(kept.Acked) || len(tr.Pushed) != 1)) {
				t.Errorf("Trace(%s) = %+v, %v; want %v", c.id, tr, err, c.err)
			}
			if has, err := txn.HasTrace(c.id); has != c.kept || err != nil {
				t.Errorf("HasTrace(%s) = %v, %v", c.id, has, err)
			}
		}
		pushed, fetched := txn.TraceEvents("m1")
		want := fmt.Sprint([]time.Time{at.Add(time.Millisecond), at.Add(3 * time.Millisecond)}, []time.Time{at.Add(2 * time.Millisecond)})
		if got := fmt.Sprint(pushed, fetched); got != want {
			t.Errorf("TraceEvents(m1) = %s, want %s", got, want)
		}
		return nil
	})
}

// TestRemoteHosts: hosts recorded are listed until deleted.
func TestRemoteHosts(t *testing.T) {
	t.Parallel()
	s, _ := openTemp(t)
	update(t, s, func(txn *Txn) error {
		for _, h := range []string{"b.lan", "a.lan", "c"} {
			if err := txn.PutRemoteHost(h); err != nil {
				return err
			}
		}
		return txn.DeleteRemoteHost("c")
	})
	var hosts []string
	_ = s.View(func(txn *Txn) error {
		txn.EachRemoteHost(func(h string) { hosts = append(hosts, h) })
		return nil
	})
	if fmt.Sprint(hosts) != "[a.lan b.lan]" {
		t.Errorf("hosts %v", hosts)
	}
}

// A trace is written as json.Marshal writes it, byte for byte.
func TestAppendTraceAsEncodingJSON(t *testing.T) {
	at := time.Date(2026, 12, 3, 7, 0, 0, 123456789, time.UTC)
	for _, tr := range []Trace{
		{},
		{From: wire.Peer{ID: "a1", Name: "alice", Cwd: "/w/<x>"}, To: "bob\n", Stored: at, Acked: at.Add(time.Second)},
		{From: wire.Peer{ID: "a1", Name: "alice"}, To: "b", Stored: at, Pushed: []time.Time{at, at.Add(time.Millisecond)},
			Fetched: []time.Time{at.In(time.FixedZone("", 3600))}, Acked: at},
	} {
		want, err := stdjson.Marshal(tr)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendTrace(nil, &tr); !bytes.Equal(got, want) {
			t.Fatalf("appendTrace =\n%s\nwant\n%s", got, want)
		}
	}
}
