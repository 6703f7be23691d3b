package install

// preToolUse is the pre-tool hook event through which Claude Code and
// Codex refuse an edit of a path another session has reserved (see
// docs/reservations.md). It is installed beside the events of hooks.Events,
// with a matcher naming the harness's file-editing tools.
const preToolUse = "PreToolUse"

// preToolEvents lists the extra hook events of t's harness.
func (t Target) preToolEvents() []string {
	if t.Harness == "claude" || t.Harness == "codex" {
		return []string{preToolUse}
	}
	return nil
}
