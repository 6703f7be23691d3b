package hooks

import (
	"encoding/json"
	"testing"
)

// Claude Code continues a turn with Stop additionalContext (shown to its
// model once); Codex and Gemini CLI with a block.
func TestStopOutput(t *testing.T) {
	for _, tc := range []struct{ harness, want string }{
		{"claude", `{"hookSpecificOutput":{"additionalContext":"hi","hookEventName":"Stop"}}`},
		{"codex", `{"decision":"block","reason":"hi"}`},
		{"gemini", `{"decision":"block","reason":"hi"}`},
	} {
		out := StopOutput(tc.harness, "hi")
		var v any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("%s: %q is not JSON: %v", tc.harness, out, err)
		}
		if got := string(out); got != tc.want+"\n" {
			t.Errorf("%s: StopOutput = %q, want %q", tc.harness, got, tc.want+"\n")
		}
	}
}
