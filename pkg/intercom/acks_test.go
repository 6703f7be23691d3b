package intercom

import (
	"fmt"
	"testing"
)

func newAckBook() *Session { return &Session{acks: map[string]ackState{}} }

// A message pushed again is never handed on twice; it is acked again only
// once the consumer acked it (a consumer may still be holding it unshown).
func TestAdmitPushedAgain(t *testing.T) {
	s := newAckBook()
	if hand, reack := s.admitLocked("m1"); !hand || reack {
		t.Fatalf("first push: hand %v reack %v, want handed on", hand, reack)
	}
	if hand, reack := s.admitLocked("m1"); hand || reack {
		t.Fatalf("again before the consumer acked: hand %v reack %v, want dropped silently", hand, reack)
	}
	s.oweLocked("m1") // the consumer acked; the broker confirmed
	s.confirmedLocked("m1")
	if s.owed != 0 || s.acks["m1"] != handedOn|consumed {
		t.Fatalf("after the confirmed ack: owed %d, state %b", s.owed, s.acks["m1"])
	}
	if hand, reack := s.admitLocked("m1"); hand || !reack || s.acks["m1"]&ackOwed == 0 || s.owed != 1 {
		t.Fatalf("again after an ack: hand %v reack %v state %b owed %d, want acked again", hand, reack, s.acks["m1"], s.owed)
	}
	// Forgotten as handed on (the bound) but still owed: not handed on.
	s2 := newAckBook()
	s2.oweLocked("m2")
	if hand, reack := s2.admitLocked("m2"); hand || !reack || s2.owed != 1 {
		t.Fatalf("owed, never shown here: hand %v reack %v owed %d, want acked again, owed once", hand, reack, s2.owed)
	}
	s2.confirmedLocked("m2")
	s2.confirmedLocked("m2") // confirmed twice (a retry): counted once
	if _, ok := s2.acks["m2"]; ok || s2.owed != 0 {
		t.Fatalf("confirmed: state kept %v, owed %d", ok, s2.owed)
	}
}

// The memory of handed-on ids is bounded; the oldest half goes past the
// limit, and acks still owed are kept.
func TestAdmitBounded(t *testing.T) {
	s := newAckBook()
	s.admitLocked("m0")
	s.oweLocked("m0")
	for i := 1; i <= shownLimit; i++ {
		s.admitLocked(fmt.Sprintf("m%d", i))
	}
	if len(s.order) > shownLimit || len(s.acks) != len(s.order)+1 {
		t.Fatalf("known %d, order %d; want at most %d handed on, and the owed one", len(s.acks), len(s.order), shownLimit)
	}
	if s.acks["m0"] != ackOwed || s.owed != 1 || len(s.pendingIDs()) != 1 {
		t.Fatalf("owed ack forgotten: state %b, owed %d", s.acks["m0"], s.owed)
	}
	if hand, reack := s.admitLocked("m0"); hand || !reack {
		t.Fatalf("owed and forgotten as handed on: hand %v reack %v, want acked again", hand, reack)
	}
}
