package hooks

import (
	"strings"
	"testing"
)

func TestCanonicalEvents(t *testing.T) {
	for _, tc := range []struct{ harness, event, want string }{
		{"gemini", "SessionStart", SessionStart},
		{"gemini", "BeforeAgent", UserPromptSubmit},
		{"gemini", "AfterTool", PostToolUse},
		{"gemini", "AfterAgent", Stop},
		{"gemini", "PostToolUse", PostToolUse}, // the Claude-shaped name works too
		{"claude", "Stop", Stop},
		{"codex", "PostToolUse", PostToolUse},
	} {
		if got, err := Canonical(tc.harness, tc.event); err != nil || got != tc.want {
			t.Errorf("Canonical(%s, %s) = %q, %v; want %q", tc.harness, tc.event, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ harness, event, want string }{
		{"claude", "AfterTool", "unknown hook event"}, // Gemini's names are Gemini's only
		{"gemini", "BeforeModel", "unknown hook event"},
		{"cursor", "Stop", "unknown harness"},
	} {
		if _, err := Canonical(tc.harness, tc.event); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Canonical(%s, %s): %v, want an error about %q", tc.harness, tc.event, err, tc.want)
		}
	}
	if got := HarnessEvents("gemini"); len(got) != len(Events) {
		t.Errorf("HarnessEvents(gemini) = %v: one per event", got)
	}
}
