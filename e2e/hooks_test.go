package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

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
	h := newH(t)
	a := newAgent(t, h)
	out, _ := a.Hook("claude", "SessionStart", claudeInput("SessionStart", map[string]any{"source": "startup"}))
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
	out, _ = a.Hook("claude", "PostToolUse", post)
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
	if out, r := a.Hook("claude", "PostToolUse", post); out.HookSpecificOutput != nil {
		t.Fatalf("second PostToolUse delivered again: %s", r.Stdout)
	}
}

func TestHooksCapAndDigest(t *testing.T) {
	t.Parallel()
	h := newH(t)
	a := newAgent(t, h)
	a.Hook("codex", "SessionStart", claudeInput("SessionStart", nil))
	sid := "cx-8f3c2a1e-4b5d-4c6e-9f70-123456789abc"
	body := strings.Repeat("x", 700)
	const n = 30
	for i := range n {
		h.OK("send", sid, fmt.Sprintf("msg-%02d %s", i, body))
	}
	seen := map[string]int{}
	calls := 0
	for len(seen) < n && calls < 10 {
		out, _ := a.Hook("codex", "PostToolUse", claudeInput("PostToolUse", map[string]any{"tool_name": "Bash"}))
		calls++
		if out.HookSpecificOutput == nil {
			t.Fatalf("call %d delivered nothing with %d of %d seen", calls, len(seen), n)
		}
		ctx := out.HookSpecificOutput.AdditionalContext
		if len(ctx) > 9000 {
			t.Fatalf("context %d chars, want <= 9000", len(ctx))
		}
		got := strings.Count(ctx, "msg-")
		if len(seen)+got < n && !strings.Contains(ctx, fmt.Sprintf("%d more messages wait", n-len(seen)-got)) {
			t.Fatalf("capped answer without the waiting line: ...%s", ctx[len(ctx)-200:])
		}
		for i := range n {
			if strings.Contains(ctx, fmt.Sprintf("msg-%02d %s\n", i, body)) {
				seen[fmt.Sprintf("%02d", i)]++
			} else if strings.Contains(ctx, fmt.Sprintf("msg-%02d ", i)) {
				t.Fatalf("message %02d delivered cut", i)
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

func TestHooksLongMessageWholeInParts(t *testing.T) {
	t.Parallel()
	h := newH(t)
	a := newAgent(t, h)
	a.Hook("claude", "SessionStart", claudeInput("SessionStart", nil))
	sid := "cc-8f3c2a1e-4b5d-4c6e-9f70-123456789abc"
	var long strings.Builder
	for i := 0; long.Len() < 25000; i++ {
		fmt.Fprintf(&long, "line %05d of the long message\n", i)
	}
	h.OK("send", sid, long.String())
	h.OK("send", sid, "a short one after it")
	var got strings.Builder
	parts := 0
	deliver := func(event string, in map[string]any) string {
		out, _ := a.Hook("claude", event, in)
		switch {
		case out.HookSpecificOutput != nil:
			return out.HookSpecificOutput.AdditionalContext
		case out.Decision == "block":
			return out.Reason
		}
		return ""
	}
	for parts < 10 {
		event, in := "PostToolUse", claudeInput("PostToolUse", map[string]any{"tool_name": "Bash"})
		if parts == 1 { // a Stop that already blocked continues a message in parts
			event, in = "Stop", claudeInput("Stop", map[string]any{"stop_hook_active": true})
		}
		text := deliver(event, in)
		if len(text) > 9000 || !strings.Contains(text, ", part ") {
			t.Fatalf("%s %d: %d chars, want a part of at most 9000: %.200q", event, parts+1, len(text), text)
		}
		parts++
		_, body, _ := strings.Cut(text, ":\n")
		body = body[:strings.LastIndex(body, "\n[")]
		got.WriteString(body)
		if strings.Contains(text, "[end of message") {
			break
		}
		// Not acknowledged before its last part: it still waits.
		if r := h.Run("--session", sid, "--json", "inbox", "--peek"); !strings.Contains(r.Stdout, "line 00000") {
			t.Fatalf("after part %d the message is no longer waiting: %s", parts, r.Stdout)
		}
	}
	if parts < 3 || !strings.Contains(got.String(), long.String()) {
		t.Fatalf("%d parts joined to %d chars; want the whole %d-char message", parts, got.Len(), long.Len())
	}
	// A Stop that already blocked does not start a new message...
	if text := deliver("Stop", claudeInput("Stop", map[string]any{"stop_hook_active": true})); text != "" {
		t.Fatalf("stop_hook_active started a new message: %.200q", text)
	}
	// ...the next boundary does, and nothing comes twice.
	if text := deliver("PostToolUse", claudeInput("PostToolUse", map[string]any{"tool_name": "Bash"})); !strings.Contains(text, "a short one after it") || strings.Contains(text, "line 00000") {
		t.Fatalf("next boundary: %.300q", text)
	}
	if r := h.Run("--session", sid, "inbox"); !strings.Contains(r.Stdout, "No messages.") {
		t.Fatalf("inbox after delivery: %s", r.Stdout)
	}
}

// stopContinues is the text a Claude Code Stop answer continues the turn
// with: its Stop additionalContext, never a block (whose reason Claude
// Code 2.1.33x shows the model twice); "" when the agent may stop.
func stopContinues(t *testing.T, out hookOut) string {
	t.Helper()
	if out.Decision != "" {
		t.Fatalf("Claude Code Stop answered decision %q, want Stop additionalContext", out.Decision)
	}
	if out.HookSpecificOutput == nil {
		return ""
	}
	if out.HookSpecificOutput.HookEventName != "Stop" {
		t.Fatalf("Stop answered for hookEventName %q", out.HookSpecificOutput.HookEventName)
	}
	return out.HookSpecificOutput.AdditionalContext
}

func TestHooksStopBlocksWithMessages(t *testing.T) {
	t.Parallel()
	h := newH(t)
	a := newAgent(t, h)
	a.Hook("claude", "SessionStart", claudeInput("SessionStart", nil))
	sid := "cc-8f3c2a1e-4b5d-4c6e-9f70-123456789abc"
	// Nothing waiting: Stop lets the agent stop and reports idle.
	if out, r := a.Hook("claude", "Stop", claudeInput("Stop", map[string]any{"stop_hook_active": false})); stopContinues(t, out) != "" {
		t.Fatalf("Stop with no messages: %s", r.Stdout)
	}
	// A queued message is held while busy and released by Stop (idle).
	a.Hook("claude", "UserPromptSubmit", claudeInput("UserPromptSubmit", map[string]any{"prompt": "go"}))
	h.OK("send", sid, "--delivery", "queue", "after you finish")
	if out, r := a.Hook("claude", "PostToolUse", claudeInput("PostToolUse", map[string]any{"tool_name": "Edit"})); out.HookSpecificOutput != nil {
		t.Fatalf("queued message delivered while busy: %s", r.Stdout)
	}
	out, _ := a.Hook("claude", "Stop", claudeInput("Stop", map[string]any{"stop_hook_active": false}))
	if !strings.Contains(stopContinues(t, out), "after you finish") {
		t.Fatalf("Stop: %+v, want the turn continued with the queued message", out)
	}
	// stop_hook_active: never block twice in a row.
	h.OK("send", sid, "one more")
	if out, r := a.Hook("claude", "Stop", claudeInput("Stop", map[string]any{"stop_hook_active": true})); stopContinues(t, out) != "" {
		t.Fatalf("Stop with stop_hook_active continued the turn: %s", r.Stdout)
	}
	out, _ = a.Hook("claude", "Stop", claudeInput("Stop", map[string]any{"stop_hook_active": false}))
	if !strings.Contains(stopContinues(t, out), "one more") {
		t.Fatalf("Stop: %+v, want the turn continued with 'one more'", out)
	}
	// Passive messages never wake: Stop does not block for them.
	h.OK("send", sid, "--delivery", "passive", "fyi only")
	if out, r := a.Hook("claude", "Stop", claudeInput("Stop", map[string]any{"stop_hook_active": false})); stopContinues(t, out) != "" {
		t.Fatalf("passive message continued the turn at Stop: %s", r.Stdout)
	}
}

// A hook never gets in the agent's way: on every problem it answers
// nothing, says one line on stderr and exits 0.
func TestHooksNeverBlock(t *testing.T) {
	t.Parallel()
	good := `{"session_id":"s-12345678","hook_event_name":"UserPromptSubmit","cwd":"/tmp","prompt":"hi"}`
	for _, tc := range []struct {
		name, stdin, want string
		args              []string
		setup             func(h *H)
	}{
		{name: "bad config", stdin: good, want: "config", setup: func(h *H) { h.WriteConfig(`{"askTimeoutMs": "soon"`) }},
		{name: "invalid config value", stdin: good, want: "askTimeoutMs", setup: func(h *H) { h.WriteConfig(`{"askTimeoutMs": "soon"}`) }},
		{name: "empty stdin", stdin: "", want: "empty"},
		{name: "not JSON", stdin: "not json", want: "not JSON"},
		{name: "no session_id", stdin: `{"hook_event_name":"UserPromptSubmit"}`, want: "session_id"},
		{name: "stdin too large", stdin: `{"session_id":"s-12345678","x":"` + strings.Repeat("y", 16<<20) + `"}`, want: "too large"},
		{name: "unknown event", stdin: good, want: "unknown hook event", args: []string{"hook", "claude", "PreCompact"}},
		{name: "unknown harness", stdin: good, want: "unknown harness", args: []string{"hook", "cursor", "Stop"}},
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
			args := tc.args
			if args == nil {
				args = []string{"hook", "claude", "UserPromptSubmit"}
			}
			r := h.RunIn(h.Cwd, tc.stdin, args...)
			lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
			if r.Code != 0 || r.Stdout != "" || len(lines) != 1 || !strings.Contains(strings.ToLower(r.Stderr), strings.ToLower(tc.want)) {
				t.Fatalf("exit %d, stdout %q, stderr %q: want exit 0, no answer, one line about %q", r.Code, r.Stdout, r.Stderr, tc.want)
			}
		})
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
	// Claude: the asyncRewake Stop hook that wakes an idle session.
	var settings struct {
		Hooks map[string][]struct {
			Hooks []map[string]any `json:"hooks"`
		} `json:"hooks"`
	}
	_ = json.Unmarshal(first, &settings)
	rewake := 0
	for _, g := range settings.Hooks["Stop"] {
		for _, hk := range g.Hooks {
			if hk["asyncRewake"] == true && strings.Contains(hk["command"].(string), " wait --rewake") {
				rewake++
			}
		}
	}
	if rewake != 1 {
		t.Fatalf("asyncRewake Stop hooks: %d, want 1:\n%s", rewake, first)
	}
	// Codex: entries merged into the user's tables once, removed exactly.
	run("install", "codex")
	run("install", "codex")
	toml, _ := os.ReadFile(filepath.Join(home, ".codex", "config.toml"))
	if strings.Count(string(toml), "[mcp_servers.intercom]") != 1 || !strings.Contains(string(toml), "hooks = true") || strings.Contains(string(toml), "codex_hooks") ||
		!strings.Contains(string(toml), `"INTERCOM_HOME"`) || !strings.HasPrefix(string(toml), userToml) {
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

// brokerWaiters is how many inbox waits the broker of h has now.
func brokerWaiters(t *testing.T, h *H) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := intercom.Connect(ctx, intercom.Options{Home: h.Home, NoSpawn: true})
	if err != nil {
		return -1
	}
	defer c.Close()
	st, err := intercom.Call[wire.Stats](ctx, c, wire.SubjStats, struct{}{})
	if err != nil {
		return -1
	}
	return st.Waiters
}

func TestWaitSurvivesBrokerRestart(t *testing.T) {
	t.Parallel()
	h := newH(t)
	a := newAgent(t, h)
	a.Hook("claude", "SessionStart", claudeInput("SessionStart", nil))
	sid := "cc-8f3c2a1e-4b5d-4c6e-9f70-123456789abc"
	w := h.Start("--session", sid, "--json", "wait", "--timeout", "120s")
	Eventually(t, 20*time.Second, func() bool { return brokerWaiters(t, h) == 1 }, "the wait to be registered")
	h.KillBroker()
	// The next command starts a new broker; the message it stores must
	// end the wait that was asked of the old one.
	h.OK("send", sid, "sent after the restart")
	line, ok := w.Line(60 * time.Second)
	if !ok {
		t.Fatalf("wait did not wake after the broker restart; stderr %s", w.Stderr())
	}
	<-w.Done()
	if code := w.Cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(line, "sent after the restart") {
		t.Fatalf("wait: exit %d, output %q", code, line)
	}
}

func TestWaitWakesWhileAttachHolds(t *testing.T) {
	t.Parallel()
	h := newH(t)
	att, ev := h.Attach("--name", "watched")
	id := ev["id"].(string)
	w := h.Start("--session", id, "--json", "wait", "--timeout", "120s")
	Eventually(t, 20*time.Second, func() bool { return brokerWaiters(t, h) == 1 }, "the wait to be registered")
	h.OK("send", id, "for the holder")
	if m := att.Event(20 * time.Second); m["text"] != "for the holder" {
		t.Fatalf("attach got %v", m)
	}
	line, ok := w.Line(30 * time.Second)
	if !ok {
		t.Fatalf("wait did not wake while attach holds the session; stderr %s", w.Stderr())
	}
	<-w.Done()
	var got struct {
		Messages      []map[string]any `json:"messages"`
		HeldElsewhere bool             `json:"held_elsewhere"`
	}
	if err := json.Unmarshal([]byte(line), &got); err != nil || len(got.Messages) != 1 || got.Messages[0]["text"] != "for the holder" || w.Cmd.ProcessState.ExitCode() != 2 {
		t.Fatalf("wait: exit %d, output %q", w.Cmd.ProcessState.ExitCode(), line)
	}
}

func TestWaitRewakeHook(t *testing.T) {
	t.Parallel()
	h := newH(t)
	a := newAgent(t, h)
	a.Hook("claude", "SessionStart", claudeInput("SessionStart", nil))
	sid := "cc-8f3c2a1e-4b5d-4c6e-9f70-123456789abc"
	// As Claude Code runs it: through sh -c, hook JSON on stdin, in the background.
	done := make(chan agentAnswer, 1)
	go func() {
		done <- a.do("hook", `{"session_id":"8f3c2a1e-4b5d-4c6e-9f70-123456789abc","hook_event_name":"Stop"}`,
			filepath.Join(binDir, "intercom"), "wait", "--rewake", "--timeout", "120s")
	}()
	Eventually(t, 20*time.Second, func() bool { return brokerWaiters(t, h) == 1 }, "the rewake wait to be registered")
	h.OK("send", sid, "wake up, idle agent")
	var r agentAnswer
	select {
	case r = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the rewake hook did not wake")
	}
	if r.Code != 2 || !strings.Contains(r.Stderr, "wake up, idle agent") || r.Stdout != "" {
		t.Fatalf("rewake: exit %d, stdout %q, stderr %q; want 2 and the message on stderr", r.Code, r.Stdout, r.Stderr)
	}
	// Taken once: the next boundary has nothing.
	if out, _ := a.Hook("claude", "PostToolUse", claudeInput("PostToolUse", map[string]any{"tool_name": "Bash"})); out.HookSpecificOutput != nil {
		t.Fatalf("woken message delivered again: %+v", out)
	}
	// Any problem is exit 0, never 2 (which would wake the model with it).
	h.WriteConfig(`{"askTimeoutMs": "soon"}`)
	r = a.do("hook", "{}", filepath.Join(binDir, "intercom"), "wait", "--rewake", "--timeout", "5s")
	if r.Code != 0 || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
		t.Fatalf("rewake with a bad config: exit %d, stderr %q", r.Code, r.Stderr)
	}
}
