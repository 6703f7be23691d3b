package intercom

import (
	"fmt"
	"testing"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// A message pushed again is never handed on twice; it is acked again only
// once the consumer acked it (a consumer may still be holding it unshown).
func TestAdmitPushedAgain(t *testing.T) {
	s := &Session{shown: map[string]bool{}, pending: map[string]bool{}}
	m := wire.Message{ID: "m1"}
	if hand, reack := s.admitLocked(m.ID); !hand || reack {
		t.Fatalf("first push: hand %v reack %v, want handed on", hand, reack)
	}
	if hand, reack := s.admitLocked(m.ID); hand || reack {
		t.Fatalf("again before the consumer acked: hand %v reack %v, want dropped silently", hand, reack)
	}
	s.shown["m1"] = true // the consumer acked; the broker confirmed
	if hand, reack := s.admitLocked(m.ID); hand || !reack || !s.pending["m1"] {
		t.Fatalf("again after an ack: hand %v reack %v pending %v, want acked again", hand, reack, s.pending["m1"])
	}
	// Forgotten from shown (the bound) but still owed: not handed on.
	s2 := &Session{shown: map[string]bool{}, pending: map[string]bool{"m2": true}}
	if hand, reack := s2.admitLocked("m2"); hand || !reack {
		t.Fatalf("owed, forgotten from shown: hand %v reack %v, want acked again", hand, reack)
	}
}

// The memory of shown ids is bounded; the oldest half goes past the limit.
func TestAdmitBounded(t *testing.T) {
	s := &Session{shown: map[string]bool{}, pending: map[string]bool{}}
	for i := range shownLimit + 1 {
		s.admitLocked(fmt.Sprintf("m%d", i))
	}
	if len(s.shown) > shownLimit || len(s.shown) != len(s.order) {
		t.Fatalf("shown %d, order %d; want at most %d, equal", len(s.shown), len(s.order), shownLimit)
	}
}
