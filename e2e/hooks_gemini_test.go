package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// geminiInput is a Gemini CLI hook input, shaped as its hooks reference
// documents it.
func geminiInput(event string, extra map[string]any) map[string]any {
	in := map[string]any{
		"session_id": "3b1f9c2d-7e6a-4f1b-8c2d-0a1b2c3d4e5f", "transcript_path": "/tmp/gm.json",
		"cwd": "/work/proj", "hook_event_name": event, "timestamp": "2026-12-01T10:00:00Z",
	}
	for k, v := range extra {
		in[k] = v
	}
	return in
}

// Gemini CLI's event names drive the same workflow: SessionStart joins
// gm-<id>, AfterTool hands waiting messages over once under its own event
// name, AfterAgent blocks once for a waking message and not again when
// stop_hook_active; every answer with nothing to say is {}.
func TestHooksGeminiEvents(t *testing.T) {
	t.Parallel()
	h := newH(t)
	a := newAgent(t, h)
	sid := "gm-3b1f9c2d-7e6a-4f1b-8c2d-0a1b2c3d4e5f"
	out, _ := a.Hook("gemini", "SessionStart", geminiInput("SessionStart", map[string]any{"source": "startup"}))
	if out.HookSpecificOutput == nil || out.HookSpecificOutput.HookEventName != "SessionStart" || !strings.Contains(out.HookSpecificOutput.AdditionalContext, sid) {
		t.Fatalf("SessionStart output %+v", out)
	}
	if r := Row(h.Sessions("--scope", "all"), "gemini-proj"); r == nil || r["id"] != sid || r["connected"] != true {
		t.Fatalf("hook session row %v", r)
	}
	if _, r := a.Hook("gemini", "BeforeAgent", geminiInput("BeforeAgent", map[string]any{"prompt": "hi"})); r.Stdout != "{}\n" {
		t.Fatalf("BeforeAgent with nothing waiting answered %q, want {}", r.Stdout)
	}
	h.OK("send", sid, "first note")
	after := geminiInput("AfterTool", map[string]any{"tool_name": "run_shell_command", "tool_input": map[string]any{"command": "ls"},
		"tool_response": map[string]any{"llmContent": "ok", "returnDisplay": "ok"}})
	out, _ = a.Hook("gemini", "AfterTool", after)
	if out.HookSpecificOutput == nil || out.HookSpecificOutput.HookEventName != "AfterTool" || strings.Count(out.HookSpecificOutput.AdditionalContext, "first note") != 1 {
		t.Fatalf("AfterTool output %+v", out)
	}
	if r := Row(h.Sessions("--scope", "all"), "gemini-proj"); r["status"] != "tool:run_shell_command" {
		t.Fatalf("status after AfterTool: %v", r)
	}
	if _, r := a.Hook("gemini", "AfterTool", after); r.Stdout != "{}\n" {
		t.Fatalf("second AfterTool answered %q, want {} (delivered once)", r.Stdout)
	}
	h.OK("send", sid, "wake up")
	out, _ = a.Hook("gemini", "AfterAgent", geminiInput("AfterAgent", map[string]any{"prompt": "hi", "prompt_response": "done", "stop_hook_active": false}))
	if out.Decision != "block" || !strings.Contains(out.Reason, "wake up") {
		t.Fatalf("AfterAgent with a waking message: %+v, want a block carrying it", out)
	}
	h.OK("send", sid, "later")
	if _, r := a.Hook("gemini", "AfterAgent", geminiInput("AfterAgent", map[string]any{"stop_hook_active": true})); r.Stdout != "{}\n" {
		t.Fatalf("AfterAgent with stop_hook_active answered %q, want {} (no second block)", r.Stdout)
	}
}

// Every problem is one line on stderr, exit 0 and {} on stdout: Gemini CLI
// shows a hook's stderr to the user when its stdout is empty.
func TestHooksGeminiNeverNoisy(t *testing.T) {
	t.Parallel()
	good := `{"session_id":"3b1f9c2d-0000","hook_event_name":"BeforeAgent","cwd":"/tmp","prompt":"hi"}`
	for _, tc := range []struct {
		name, stdin, event, want string
		setup                    func(h *H)
	}{
		{name: "bad config", stdin: good, want: "config", setup: func(h *H) { h.WriteConfig(`{"askTimeoutMs": "soon"`) }},
		{name: "empty stdin", stdin: "", want: "empty"},
		{name: "not JSON", stdin: "not json", want: "not JSON"},
		{name: "unknown event", stdin: good, event: "BeforeModel", want: "unknown hook event"},
		{name: "broker unreachable", stdin: good, want: "broker", setup: func(h *H) {
			h.WriteConfig(`{"brokerCommand": "/nonexistent/intercom-broker"}`)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newH(t)
			if tc.setup != nil {
				tc.setup(h)
			}
			event := tc.event
			if event == "" {
				event = "BeforeAgent"
			}
			r := h.RunIn(h.Cwd, tc.stdin, "hook", "gemini", event)
			lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
			if r.Code != 0 || r.Stdout != "{}\n" || len(lines) != 1 || !strings.Contains(strings.ToLower(r.Stderr), strings.ToLower(tc.want)) {
				t.Fatalf("exit %d, stdout %q, stderr %q: want exit 0, {}, one line about %q", r.Code, r.Stdout, r.Stderr, tc.want)
			}
		})
	}
}

// Under Claude Code, SessionStart tells the model that Claude Code's own
// ListAgents/SendMessage are separate from intercom, so that it sends a
// message one way; other harnesses get no such note.
func TestHooksIntroNamesClaudeNativeMessaging(t *testing.T) {
	t.Parallel()
	h := newH(t)
	a := newAgent(t, h)
	out, _ := a.Hook("claude", "SessionStart", claudeInput("SessionStart", map[string]any{"source": "startup"}))
	if out.HookSpecificOutput == nil || !strings.Contains(out.HookSpecificOutput.AdditionalContext, "SendMessage") {
		t.Fatalf("Claude Code's SessionStart context says nothing of its own SendMessage: %+v", out)
	}
	h2 := newH(t) // one agent per home: each agent's cleanup awaits every holder of its home
	b := newAgent(t, h2)
	out, _ = b.Hook("gemini", "SessionStart", geminiInput("SessionStart", map[string]any{"source": "startup"}))
	if out.HookSpecificOutput == nil || strings.Contains(out.HookSpecificOutput.AdditionalContext, "SendMessage") {
		t.Fatalf("Gemini's SessionStart context names Claude Code's SendMessage: %+v", out)
	}
}

// `intercom install gemini` writes under GEMINI_CLI_HOME when it is set,
// --dry-run writes nothing, and a settings.json that is not JSON is
// refused with exit 1 and one line naming it, the file left as it was.
func TestInstallGeminiCLI(t *testing.T) {
	t.Parallel()
	h := newH(t)
	home, gemHome := filepath.Join(h.Cwd, "userhome"), filepath.Join(h.Cwd, "gemhome")
	h.Env = append(h.Env, "HOME="+home, "GEMINI_CLI_HOME="+gemHome)
	settings := filepath.Join(gemHome, ".gemini", "settings.json")
	if r := h.RunIn(h.Cwd, "", "install", "gemini", "--dry-run"); r.Code != 0 || !strings.Contains(r.Stdout, "hook gemini AfterTool") {
		t.Fatalf("dry run: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if _, err := os.Stat(settings); !os.IsNotExist(err) {
		t.Fatalf("the dry run wrote %s: %v", settings, err)
	}
	if r := h.RunIn(h.Cwd, "", "install", "gemini"); r.Code != 0 {
		t.Fatalf("install: exit %d %s", r.Code, r.Stderr)
	}
	if data, err := os.ReadFile(settings); err != nil || !strings.Contains(string(data), `"mcpServers"`) {
		t.Fatalf("install wrote no %s (GEMINI_CLI_HOME): %v", settings, err)
	}
	if _, err := os.Stat(filepath.Join(home, ".gemini")); !os.IsNotExist(err) {
		t.Errorf("install wrote into HOME's .gemini although GEMINI_CLI_HOME is set: %v", err)
	}
	broken := "{\n  // my settings\n  \"general\": {}\n}\n"
	if err := os.WriteFile(settings, []byte(broken), 0o600); err != nil {
		t.Fatal(err)
	}
	r := h.RunIn(h.Cwd, "", "install", "gemini")
	if lines := strings.Split(strings.TrimSpace(r.Stderr), "\n"); r.Code != 1 || len(lines) != 1 || !strings.Contains(r.Stderr, settings) {
		t.Fatalf("install over broken JSON: exit %d, stderr %q; want exit 1 and one line naming %s", r.Code, r.Stderr, settings)
	}
	if data, _ := os.ReadFile(settings); string(data) != broken {
		t.Errorf("the broken settings were changed: %q", data)
	}
}
