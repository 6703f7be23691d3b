package ui

import (
	"strings"
	"testing"

	"github.com/intercom-dev/intercom/pkg/wire"
)

func TestWakePausedLabelTellsThePerson(t *testing.T) {
	if got := wakePausedLabel(wire.Session{Name: "ping"}); got != "" {
		t.Fatalf("label for a session without paused wake-ups: %q", got)
	}
	got := wakePausedLabel(wire.Session{Name: "ping", WakePaused: "pong"})
	if !strings.Contains(got, "wake-ups paused with pong") || !strings.Contains(got, "a person's message resumes") {
		t.Fatalf("label %q", got)
	}
}
