package store

import (
	"testing"
	"time"
)

// Two events of one resource at one instant are both kept, in order, and
// the token high-water mark only rises.
func TestReservationEventsAtOneInstantAndTokens(t *testing.T) {
	st, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	at := time.Now().UTC()
	var toks []uint64
	err = st.Update(func(txn *Txn) error {
		for _, ev := range []string{"gone", "grant"} {
			if err := txn.AddReservationEvent(ReservationEvent{At: at, Project: "/p", Resource: "a.go", Event: ev}, time.Hour); err != nil {
				return err
			}
			tok, err := txn.NextReservationToken()
			if err != nil {
				return err
			}
			toks = append(toks, tok)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := st.View(func(txn *Txn) error {
		return txn.ReservationHistory("/p", "a.go", func(ev ReservationEvent) bool { got = append(got, ev.Event); return true })
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != "gone" || got[1] != "grant" {
		t.Fatalf("history %q, want gone then grant", got)
	}
	if toks[0] != 1 || toks[1] != 2 {
		t.Fatalf("tokens %v, want 1 then 2", toks)
	}
}
