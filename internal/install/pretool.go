package install

import "github.com/intercom-dev/intercom/internal/hooks"

// preToolUse is the pre-tool hook event through which Claude Code and
// Codex (and Gemini CLI, as BeforeTool) refuse an edit of a path another session has reserved (see
// docs/reservations.md). It is installed beside the events of hooks.Events,
// with a matcher naming the harness's file-editing tools.
const preToolUse = hooks.PreToolUse

// GeminiBeforeTool is Gemini CLI's name of the pre-tool event (its
// {"decision":"deny"} refuses the call).
const GeminiBeforeTool = hooks.GeminiBeforeTool

// preToolEvents lists the extra hook events of t's harness.
func (t Target) preToolEvents() []string {
	switch t.Harness {
	case "claude", "codex":
		return []string{preToolUse}
	case "gemini":
		return []string{GeminiBeforeTool}
	}
	return nil
}
