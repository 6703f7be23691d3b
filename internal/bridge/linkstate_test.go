package bridge

import (
	"errors"
	"log/slog"
	"testing"
)

// The link going up or down kicks changed (the run loop reports the hosts
// to the broker at once, not at its next tick); a repeated state does not.
func TestLinkStateKicksOnTransitions(t *testing.T) {
	st := newLinkState("join", "127.0.0.1:1", Options{Log: slog.New(slog.DiscardHandler)})
	kicked := func() bool {
		select {
		case <-st.changed:
			return true
		default:
			return false
		}
	}
	steps := []struct {
		up   bool
		want bool
	}{
		{up: true, want: true},   // connected
		{up: true, want: false},  // a reconnect handler firing again
		{up: false, want: true},  // link down
		{up: false, want: false}, // down again (another error)
		{up: true, want: true},   // back
	}
	for i, s := range steps {
		var err error
		if !s.up {
			err = errors.New("EOF")
		}
		st.setConnected(s.up, err)
		if got := kicked(); got != s.want {
			t.Fatalf("step %d (up=%v): kicked %v, want %v", i, s.up, got, s.want)
		}
	}
}
