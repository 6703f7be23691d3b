//go:build harness

package harness

import (
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/intercom-dev/intercom/internal/codexapp"
)

// CodexHook is one hook as Codex's `hooks/list` reports it.
type CodexHook = codexapp.Hook

// startAppServer starts `codex app-server` in the world (stdio JSON-RPC,
// the API Codex's own /hooks screen uses to review and trust hooks).
func (w *World) startAppServer() (*codexapp.Server, error) {
	ctx, cancel := withTimeout(2 * time.Minute)
	c := exec.CommandContext(ctx, codexBin, "app-server")
	c.Env, c.Dir = w.Env, w.Root
	s, err := codexapp.Start(c, "intercom-harness-suite", "0")
	if err != nil {
		cancel()
		return nil, err
	}
	w.t.Cleanup(func() { cancel(); _ = s.Close() })
	return s, nil
}

// CodexHooks lists the hooks Codex would run in dir, with their trust.
func (w *World) CodexHooks(dir string) []CodexHook {
	w.t.Helper()
	s, err := w.startAppServer()
	if err != nil {
		w.t.Fatal(err)
	}
	defer s.Close() // it exits at EOF
	hooks, err := s.Hooks(dir)
	if err != nil {
		w.t.Fatal(err)
	}
	return hooks
}

// TrustCodexHooks trusts, as the user would in Codex's /hooks screen, the
// hooks in dir whose command satisfies ours, and returns them.
func (w *World) TrustCodexHooks(dir string, ours func(command string) bool) []CodexHook {
	w.t.Helper()
	s, err := w.startAppServer()
	if err != nil {
		w.t.Fatal(err)
	}
	defer s.Close() // it exits at EOF
	hooks, err := s.Hooks(dir)
	if err != nil {
		w.t.Fatal(err)
	}
	var edits []any
	var trusted []CodexHook
	for _, h := range hooks {
		if !ours(h.Command) {
			continue
		}
		edits = append(edits, map[string]any{"keyPath": "hooks.state." + strconv.Quote(h.Key) + ".trusted_hash", "mergeStrategy": "upsert", "value": h.CurrentHash})
		trusted = append(trusted, h)
	}
	if len(edits) == 0 {
		w.t.Fatalf("no hooks to trust among %+v", hooks)
	}
	if _, err := s.Call("config/batchWrite", map[string]any{"edits": edits}); err != nil {
		w.t.Fatal(err)
	}
	return trusted
}

// codexHookCommand reports whether a hook command runs intercom's Codex
// hook: intercom-hook codex EVENT (install's choice when it sits beside
// intercom, as here) or intercom hook codex EVENT.
func codexHookCommand(cmd string) bool {
	return strings.Contains(cmd, "intercom-hook codex ") || strings.Contains(cmd, " hook codex ")
}
