package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hookH is a home whose hook sessions are held for the life of a stand-in
// harness process, ended (with its holder) at cleanup.
func hookH(t *testing.T) *H {
	t.Helper()
	h := newH(t)
	harness := exec.Command("sleep", "600")
	if err := harness.Start(); err != nil {
		t.Fatal(err)
	}
	h.Env = append(h.Env, "INTERCOM_HARNESS_PID="+strconv.Itoa(harness.Process.Pid))
	t.Cleanup(func() {
		_ = harness.Process.Kill()
		_ = harness.Wait()
		Eventually(t, 10*time.Second, func() bool { return len(hookHolders(h)) == 0 }, "hook holders to exit")
	})
	return h
}

// hookHolders lists `intercom hold` processes of h.
func hookHolders(h *H) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		env, _ := os.ReadFile("/proc/" + e.Name() + "/environ")
		if strings.Contains(string(cmd), "\x00hold\x00") && strings.Contains(string(env), "INTERCOM_HOME="+h.Home+"\x00") && alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

type hookOut struct {
	Decision           string `json:"decision"`
	Reason             string `json:"reason"`
	HookSpecificOutput *struct {
		HookEventName     string `json:"hookEventName"`
		AdditionalContext string `json:"additionalContext"`
	} `json:"hookSpecificOutput"`
}

// runHook feeds input to `intercom hook HARNESS EVENT` and decodes stdout
// (empty stdout → zero hookOut).
func runHook(t *testing.T, h *H, harness, event string, input map[string]any) (hookOut, string) {
	t.Helper()
	data, _ := json.Marshal(input)
	r := h.RunIn(h.Cwd, string(data), "hook", harness, event)
	if r.Code != 0 {
		t.Fatalf("hook %s %s: exit %d, stderr %s", harness, event, r.Code, r.Stderr)
	}
	var out hookOut
	if strings.TrimSpace(r.Stdout) == "" {
		return out, ""
	}
	if strings.Count(strings.TrimSpace(r.Stdout), "\n") != 0 {
		t.Fatalf("hook output is not one JSON object: %q", r.Stdout)
	}
	dec := json.NewDecoder(strings.NewReader(r.Stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("hook output %q: %v", r.Stdout, err)
	}
	return out, r.Stdout
}

// recorded example inputs, shaped as the harnesses document them.
func claudeInput(event string, extra map[string]any) map[string]any {
	in := map[string]any{
		"session_id": "8f3c2a1e-4b5d-4c6e-9f70-123456789abc", "transcript_path": "/tmp/t.jsonl",
		"cwd": "/work/proj", "permission_mode": "default", "hook_event_name": event,
	}
	for k, v := range extra {
		in[k] = v
	}
	return in
}

func TestHooksClaudeDeliverExactlyOnce(t *testing.T) {
	t.Parallel()
	h := hookH(t)
	out, _ := runHook(t, h, "claude", "SessionStart", claudeInput("SessionStart", map[string]any{"source": "startup"}))
	if out.HookSpecificOutput == nil || out.HookSpecificOutput.HookEventName != "SessionStart" || !strings.Contains(out.HookSpecificOutput.AdditionalContext, "cc-8f3c2a1e") {
		t.Fatalf("SessionStart output %+v", out)
	}
	sid := "cc-8f3c2a1e-4b5d-4c6e-9f70-123456789abc"
	rows := h.Sessions("--scope", "all")
	if r := Row(rows, "claude-proj"); r == nil || r["id"] != sid || r["connected"] != true || r["state"] != "idle" {
		t.Fatalf("hook session row %v", r)
	}
	for i := range 3 {
		h.OK("send", sid, fmt.Sprintf("note %d", i))
	}
	post := claudeInput("PostToolUse", map[string]any{"tool_name": "Bash", "tool_input": map[string]any{"command": "ls"}, "tool_response": map[string]any{"stdout": ""}})
	out, _ = runHook(t, h, "claude", "PostToolUse", post)
	if out.HookSpecificOutput == nil || out.HookSpecificOutput.HookEventName != "PostToolUse" {
		t.Fatalf("PostToolUse output %+v", out)
	}
	for i := range 3 {
		if n := strings.Count(out.HookSpecificOutput.AdditionalContext, fmt.Sprintf("note %d", i)); n != 1 {
			t.Fatalf("note %d appears %d times in %q", i, n, out.HookSpecificOutput.AdditionalContext)
		}
	}
	if r := Row(h.Sessions("--scope", "all"), "claude-proj"); r["status"] != "tool:Bash" || r["state"] != "busy" {
		t.Fatalf("status after PostToolUse: %v", r)
	}
	// Delivered once: the next boundary has nothing.
	if out, raw := runHook(t, h, "claude", "PostToolUse", post); out.HookSpecificOutput != nil {
		t.Fatalf("second PostToolUse delivered again: %s", raw)
	}
}

func TestHooksCapAndDigest(t *testing.T) {
	t.Parallel()
	h := hookH(t)
	runHook(t, h, "codex", "SessionStart", claudeInput("SessionStart", nil))
	sid := "cx-8f3c2a1e-4b5d-4c6e-9f70-123456789abc"
	body := strings.Repeat("x", 700)
	const n = 30
	for i := range n {
		h.OK("send", sid, fmt.Sprintf("msg-%02d %s", i, body))
	}
	seen := map[string]int{}
	calls := 0
	for len(seen) < n && calls < 10 {
		out, _ := runHook(t, h, "codex", "PostToolUse", claudeInput("PostToolUse", map[string]any{"tool_name": "Bash"}))
		calls++
		if out.HookSpecificOutput == nil {
			t.Fatalf("call %d delivered nothing with %d of %d seen", calls, len(seen), n)
		}
		ctx := out.HookSpecificOutput.AdditionalContext
		if len(ctx) > 9000 {
			t.Fatalf("context %d chars, want <= 9000", len(ctx))
		}
		if len(seen)+strings.Count(ctx, "msg-") < n && !strings.Contains(ctx, "more messages: run `intercom") {
			t.Fatalf("capped answer without digest line: ...%s", ctx[len(ctx)-200:])
		}
		for i := range n {
			if strings.Contains(ctx, fmt.Sprintf("msg-%02d ", i)) {
				seen[fmt.Sprintf("%02d", i)]++
			}
		}
	}
	if calls < 2 {
		t.Fatalf("30 × 700 chars fit in one answer: cap not applied")
	}
	for k, v := range seen {
		if v != 1 {
			t.Fatalf("message %s delivered %d times", k, v)
		}
	}
	if len(seen) != n {
		t.Fatalf("delivered %d of %d", len(seen), n)
	}
}

func TestHooksStopBlocksWithMessages(t *testing.T) {
	t.Parallel()
	h := hookH(t)
	runHook(t, h, "claude", "SessionStart", claudeInput("SessionStart", nil))
	sid := "cc-8f3c2a1e-4b5d-4c6e-9f70-123456789abc"
	// Nothing waiting: Stop lets the agent stop and reports idle.
	if out, raw := runHook(t, h, "claude", "Stop", claudeInput("Stop", map[string]any{"stop_hook_active": false})); out.Decision != "" {
		t.Fatalf("Stop with no messages: %s", raw)
	}
	// A queued message is held while busy and released by Stop (idle).
	runHook(t, h, "claude", "UserPromptSubmit", claudeInput("UserPromptSubmit", map[string]any{"prompt": "go"}))
	h.OK("send", sid, "--delivery", "queue", "after you finish")
	if out, raw := runHook(t, h, "claude", "PostToolUse", claudeInput("PostToolUse", map[string]any{"tool_name": "Edit"})); out.HookSpecificOutput != nil {
		t.Fatalf("queued message delivered while busy: %s", raw)
	}
	out, _ := runHook(t, h, "claude", "Stop", claudeInput("Stop", map[string]any{"stop_hook_active": false}))
	if out.Decision != "block" || !strings.Contains(out.Reason, "after you finish") {
		t.Fatalf("Stop: %+v, want block with the queued message", out)
	}
	// stop_hook_active: never block twice in a row.
	h.OK("send", sid, "one more")
	if out, raw := runHook(t, h, "claude", "Stop", claudeInput("Stop", map[string]any{"stop_hook_active": true})); out.Decision != "" {
		t.Fatalf("Stop with stop_hook_active blocked: %s", raw)
	}
	// Passive messages never wake: Stop does not block for them.
	out, _ = runHook(t, h, "claude", "Stop", claudeInput("Stop", map[string]any{"stop_hook_active": false}))
	if out.Decision != "block" || !strings.Contains(out.Reason, "one more") {
		t.Fatalf("Stop: %+v, want block with 'one more'", out)
	}
	h.OK("send", sid, "--delivery", "passive", "fyi only")
	if out, raw := runHook(t, h, "claude", "Stop", claudeInput("Stop", map[string]any{"stop_hook_active": false})); out.Decision != "" {
		t.Fatalf("passive message blocked Stop: %s", raw)
	}
}

func TestHooksBadInput(t *testing.T) {
	t.Parallel()
	h := newH(t)
	r := h.RunIn(h.Cwd, "not json", "hook", "claude", "PostToolUse")
	if r.Code != 2 || !strings.Contains(r.Stderr, "not JSON") {
		t.Fatalf("bad input: exit %d %q", r.Code, r.Stderr)
	}
	r = h.RunIn(h.Cwd, `{"hook_event_name":"Stop"}`, "hook", "claude", "Stop")
	if r.Code != 2 || !strings.Contains(r.Stderr, "session_id") {
		t.Fatalf("missing session_id: exit %d %q", r.Code, r.Stderr)
	}
	if r := h.Run("hook", "cursor", "Stop"); r.Code != 2 {
		t.Fatalf("unknown harness: exit %d", r.Code)
	}
}

func TestWaitExitCodes(t *testing.T) {
	t.Parallel()
	h := newH(t)
	_, ev := h.Attach("--name", "sleeper")
	id := ev["id"].(string)
	r := h.Run("--session", id, "wait", "--timeout", "1s")
	if r.Code != 0 || r.Stdout != "" {
		t.Fatalf("wait timeout: exit %d, stdout %q", r.Code, r.Stdout)
	}
	w := h.Start("--session", "nobody-home-0000", "wait")
	if code := w.ExitCode(30 * time.Second); code != 1 {
		t.Fatalf("wait for unknown session: exit %d", code)
	}
}

func TestWaitWokenByMessage(t *testing.T) {
	t.Parallel()
	h := newH(t)
	// A session with no holder: register through inbox-style use.
	s := h.Start("attach", "--name", "target", "--json")
	ev := s.Event(20 * time.Second)
	id := ev["id"].(string)
	s.Signal(syscall.SIGTERM) // now disconnected: messages wait in its inbox
	w := h.Start("--session", id, "--json", "wait", "--timeout", "60s")
	h.OK("send", id, "--delivery", "passive", "not a wake-up")
	h.OK("send", id, "wake up now")
	line, ok := w.Line(30 * time.Second)
	if !ok {
		t.Fatalf("wait printed nothing; stderr %s", w.Stderr())
	}
	if code := w.ExitCode(30 * time.Second); code != 2 {
		t.Fatalf("wait exit %d, want 2", code)
	}
	var got struct {
		Messages []map[string]any `json:"messages"`
	}
	if err := json.Unmarshal([]byte(line), &got); err != nil || len(got.Messages) != 1 || got.Messages[0]["text"] != "wake up now" {
		t.Fatalf("wait output %q", line)
	}
}

func TestInstallUninstallIdempotent(t *testing.T) {
	t.Parallel()
	h := newH(t)
	home := filepath.Join(h.Cwd, "userhome")
	proj := filepath.Join(h.Cwd, "proj")
	for _, d := range []string{filepath.Join(home, ".codex"), filepath.Join(proj, ".claude")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	userClaude := `{"model":"opus","hooks":{"PostToolUse":[{"matcher":"Edit","hooks":[{"type":"command","command":"prettier --write"}]}]}}`
	if err := os.WriteFile(filepath.Join(proj, ".claude", "settings.json"), []byte(userClaude), 0o644); err != nil {
		t.Fatal(err)
	}
	userToml := "model = \"o4\"\n\n[mcp_servers.other]\ncommand = \"x\"\n"
	if err := os.WriteFile(filepath.Join(home, ".codex", "config.toml"), []byte(userToml), 0o644); err != nil {
		t.Fatal(err)
	}
	h.Env = append(h.Env, "HOME="+home)
	run := func(args ...string) string {
		t.Helper()
		r := h.RunIn(proj, "", args...)
		if r.Code != 0 {
			t.Fatalf("%v: exit %d %s", args, r.Code, r.Stderr)
		}
		return r.Stdout
	}
	// Dry run writes nothing.
	out := run("install", "claude", "--project", "--dry-run")
	if !strings.Contains(out, "+ ") || !strings.Contains(out, "hook claude PostToolUse") {
		t.Fatalf("dry run diff: %s", out)
	}
	if data, _ := os.ReadFile(filepath.Join(proj, ".claude", "settings.json")); string(data) != userClaude {
		t.Fatalf("dry run changed the file")
	}
	run("install", "claude", "--project")
	first, _ := os.ReadFile(filepath.Join(proj, ".claude", "settings.json"))
	if out := run("install", "claude", "--project"); strings.Count(out, "unchanged") != 2 {
		t.Fatalf("second install changed files: %s", out)
	}
	var doc map[string]any
	if err := json.Unmarshal(first, &doc); err != nil || doc["model"] != "opus" || !strings.Contains(string(first), "prettier --write") {
		t.Fatalf("user content lost: %s", first)
	}
	for _, ev := range []string{"SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"} {
		if strings.Count(string(first), "hook claude "+ev) != 1 {
			t.Fatalf("%s hook not installed once: %s", ev, first)
		}
	}
	mcpJSON, _ := os.ReadFile(filepath.Join(proj, ".mcp.json"))
	if !strings.Contains(string(mcpJSON), `"intercom"`) {
		t.Fatalf(".mcp.json: %s", mcpJSON)
	}
	run("uninstall", "claude", "--project")
	var after, orig any
	data, _ := os.ReadFile(filepath.Join(proj, ".claude", "settings.json"))
	_ = json.Unmarshal(data, &after)
	_ = json.Unmarshal([]byte(userClaude), &orig)
	if fmt.Sprint(after) != fmt.Sprint(orig) {
		t.Fatalf("uninstall left %s, want the user's original", data)
	}
	if _, err := os.Stat(filepath.Join(proj, ".mcp.json")); !os.IsNotExist(err) {
		t.Fatalf(".mcp.json (created by install) still there after uninstall")
	}
	if out := run("uninstall", "claude", "--project"); strings.Count(out, "unchanged") != 2 {
		t.Fatalf("second uninstall changed files: %s", out)
	}
	// Codex: TOML block added once, removed exactly.
	run("install", "codex")
	run("install", "codex")
	toml, _ := os.ReadFile(filepath.Join(home, ".codex", "config.toml"))
	if strings.Count(string(toml), "[mcp_servers.intercom]") != 1 || !strings.Contains(string(toml), "codex_hooks = true") || !strings.HasPrefix(string(toml), userToml) {
		t.Fatalf("codex config: %s", toml)
	}
	hooksJSON, _ := os.ReadFile(filepath.Join(home, ".codex", "hooks.json"))
	if strings.Count(string(hooksJSON), "hook codex Stop") != 1 {
		t.Fatalf("codex hooks: %s", hooksJSON)
	}
	run("uninstall", "codex")
	toml, _ = os.ReadFile(filepath.Join(home, ".codex", "config.toml"))
	if string(toml) != userToml {
		t.Fatalf("codex config after uninstall %q, want %q", toml, userToml)
	}
}
