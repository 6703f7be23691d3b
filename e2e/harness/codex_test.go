//go:build harness

package harness

import (
	"os"
	"strings"
	"testing"
)

// codexWorld is a world with `intercom install codex` done and a peer.
func codexWorld(t *testing.T) (*World, *Peer) {
	w := NewWorld(t)
	w.InstallCodex()
	return w, w.StartPeer("peer")
}

// install merges into a config.toml the user already has (an inline
// features table included) so that Codex still starts, warns about nothing
// in it, and offers the intercom tool; uninstall takes exactly that out.
func TestCodexInstallIntoUserConfig(t *testing.T) {
	w := NewWorld(t)
	userConfig := "model_reasoning_effort = \"low\"\nfeatures = { shell_snapshot = true }\n\n[mcp_servers.other]\ncommand = \"/bin/true\"\nenabled = false\n"
	path := w.Home + "/.codex/config.toml"
	if err := os.MkdirAll(w.Home+"/.codex", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(userConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	w.InstallCodex()
	m := NewResponses(t)
	m.Script(Turn{Text: "started"})
	cx := codexTurn(t, w, w.Project("cfg"), m, "", "hello")
	for _, ev := range cx.Events() {
		item, _ := ev["item"].(map[string]any)
		msg, _ := item["message"].(string)
		if item["type"] == "error" && !strings.Contains(msg, "bypass-hook-trust") && !strings.Contains(msg, "Model metadata") {
			t.Errorf("Codex warns after install: %s", msg)
		}
	}
	if first := m.Main(); len(first) == 0 || !strings.Contains(string(first[0].Body), `"mcp__intercom"`) {
		t.Errorf("the model was not offered the intercom MCP tool")
	}

	w.OK("uninstall", "codex")
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(after), "intercom") {
		t.Errorf("uninstall left intercom in config.toml:\n%s", after)
	}
	for _, line := range strings.Split(strings.TrimSpace(userConfig), "\n") {
		if line != "" && !strings.Contains(string(after), line) {
			t.Errorf("uninstall lost the user's line %q:\n%s", line, after)
		}
	}
}

// The hooks install wrote are untrusted until the user trusts them (Codex
// skips them silently); trusted as Codex's /hooks screen does it, they run
// without --dangerously-bypass-hook-trust and deliver.
func TestCodexTrustedHooksRunWithoutBypass(t *testing.T) {
	w, peer := codexWorld(t)
	w.CodexHooksTrusted = true
	dir := w.Project("trust")
	ours := func(cmd string) bool { return strings.Contains(cmd, binDir) && codexHookCommand(cmd) }
	n := 0
	for _, h := range w.CodexHooks(dir) {
		if ours(h.Command) {
			n++
			if h.TrustStatus != "untrusted" {
				t.Errorf("hook %s is %s right after install, want untrusted", h.Key, h.TrustStatus)
			}
		}
	}
	if n < 4 {
		t.Fatalf("Codex lists %d intercom hooks after install, want SessionStart, UserPromptSubmit, PostToolUse and Stop", n)
	}
	w.TrustCodexHooks(dir, ours)
	for _, h := range w.CodexHooks(dir) {
		if ours(h.Command) && h.TrustStatus != "trusted" {
			t.Errorf("hook %s is %s after trusting it", h.Key, h.TrustStatus)
		}
	}

	idle := marker("IDLE")
	m := NewResponses(t)
	m.Script(Turn{Text: "ready"})
	thread := codexTurn(t, w, dir, m, "", "hello").ThreadID()
	target := w.AgentSession(dir, thread).ID
	peer.Send(target, idle)
	m.Script(Turn{Calls: []Call{Shell("echo step")}}, Turn{Text: "done"})
	cx := codexTurn(t, w, dir, m, thread, "carry on")
	seenOnce(t, m, idle, "message delivered by trusted hooks")
	if strings.Contains(cx.Log(), "bypass-hook-trust") {
		t.Errorf("the run bypassed hook trust")
	}
}
