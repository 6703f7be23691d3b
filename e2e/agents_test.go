package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	fakeOnce sync.Once
	fakeBin  string
	fakeErr  error
)

// fakeHarnessBin builds e2e/internal/fakeharness once.
func fakeHarnessBin(t *testing.T) string {
	t.Helper()
	fakeOnce.Do(func() {
		fakeBin = filepath.Join(binDir, "fakeharness")
		out, err := exec.Command("go", "build", "-o", fakeBin, "./internal/fakeharness").CombinedOutput()
		if err != nil {
			fakeErr = fmt.Errorf("build fakeharness: %v\n%s", err, out)
		}
	})
	if fakeErr != nil {
		t.Fatal(fakeErr)
	}
	return fakeBin
}

// Agent is a stand-in harness process (e2e/internal/fakeharness) whose
// hooks, MCP server and shell commands are its descendants, as under Claude
// Code or Codex.
type Agent struct {
	t     *testing.T
	h     *H
	cmd   *exec.Cmd
	req   *os.File
	ans   *bufio.Scanner
	stdin *os.File // the harness's stdin/stdout: the MCP server's stdio
	out   *os.File
	mu    sync.Mutex
	cs    *mcp.ClientSession
}

// newAgent starts a stand-in harness with extra environment (e.g.
// CLAUDE_CODE_SESSION_ID, INTERCOM_NAME).
func newAgent(t *testing.T, h *H, env ...string) *Agent {
	t.Helper()
	reqR, reqW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ansR, ansW, _ := os.Pipe()
	inR, inW, _ := os.Pipe()
	outR, outW, _ := os.Pipe()
	cmd := exec.Command(fakeHarnessBin(t))
	cmd.Env = append(os.Environ(), "INTERCOM_HOME="+h.Home, "INTERCOM_SESSION=", "INTERCOM_SOCKET=", "INTERCOM_HARNESS_PID=",
		"CLAUDE_CODE_SESSION_ID=", "CLAUDE_CODE_EXECPATH=", "INTERCOM_NAME=", "GORACE=atexit_sleep_ms=0",
		"PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Env = append(cmd.Env, env...)
	cmd.Dir = h.Cwd
	cmd.ExtraFiles = []*os.File{reqR, ansW}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reqR.Close()
	ansW.Close()
	inR.Close()
	outW.Close()
	a := &Agent{t: t, h: h, cmd: cmd, req: reqW, ans: bufio.NewScanner(ansR), stdin: inW, out: outR}
	a.ans.Buffer(make([]byte, 1<<20), 64<<20)
	t.Cleanup(func() {
		a.Close()
		Eventually(t, 15*time.Second, func() bool { return len(hookHolders(h)) == 0 }, "session holders to exit with the harness")
	})
	return a
}

// Pid is the harness's pid.
func (a *Agent) Pid() int { return a.cmd.Process.Pid }

// Close ends the harness (and with it the MCP server).
func (a *Agent) Close() {
	a.mu.Lock()
	cs := a.cs
	a.cs = nil
	a.mu.Unlock()
	if cs != nil {
		cs.Close()
	}
	a.req.Close()
	a.stdin.Close()
	done := make(chan struct{})
	go func() { _ = a.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = a.cmd.Process.Kill()
		<-done
	}
}

type agentAnswer struct {
	Code   int    `json:"code"`
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
	Pid    int    `json:"pid"`
	Err    string `json:"err"`
}

func (a *Agent) do(op string, stdin string, args ...string) agentAnswer {
	a.t.Helper()
	line, _ := json.Marshal(map[string]any{"op": op, "args": args, "stdin": stdin})
	if _, err := a.req.Write(append(line, '\n')); err != nil {
		a.t.Fatalf("harness %s: %v", op, err)
	}
	got := make(chan bool, 1)
	go func() { got <- a.ans.Scan() }()
	select {
	case ok := <-got:
		if !ok {
			a.t.Fatalf("harness %s: no answer", op)
		}
	case <-time.After(60 * time.Second):
		a.t.Fatalf("harness %s %v: no answer in 60s", op, args)
	}
	var ans agentAnswer
	if err := json.Unmarshal(a.ans.Bytes(), &ans); err != nil || ans.Err != "" {
		a.t.Fatalf("harness %s: %v %s", op, err, ans.Err)
	}
	return ans
}

// Hook runs `intercom hook HARNESS EVENT` through /bin/sh -c with input on
// stdin; it must exit 0. It returns the decoded answer (zero when empty).
func (a *Agent) Hook(harness, event string, input map[string]any) (hookOut, agentAnswer) {
	a.t.Helper()
	data, _ := json.Marshal(input)
	r := a.do("hook", string(data), filepath.Join(binDir, "intercom"), "hook", harness, event)
	if r.Code != 0 {
		a.t.Fatalf("hook %s %s: exit %d, stderr %s", harness, event, r.Code, r.Stderr)
	}
	return decodeHook(a.t, r.Stdout), r
}

// Bash runs a shell-tool command line through /bin/bash -c.
func (a *Agent) Bash(script string) agentAnswer {
	a.t.Helper()
	return a.do("bash", "", script)
}

// MCP starts `intercom mcp ARGS` as the harness's direct child and connects
// to it.
func (a *Agent) MCP(args ...string) *mcp.ClientSession {
	a.t.Helper()
	a.do("mcp", "", append([]string{filepath.Join(binDir, "intercom"), "mcp"}, args...)...)
	client := mcp.NewClient(&mcp.Implementation{Name: "fakeharness", Version: "v0"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: a.out, Writer: a.stdin}, nil)
	if err != nil {
		a.t.Fatalf("connect MCP: %v", err)
	}
	a.mu.Lock()
	a.cs = cs
	a.mu.Unlock()
	return cs
}

func decodeHook(t *testing.T, stdout string) hookOut {
	t.Helper()
	var out hookOut
	if strings.TrimSpace(stdout) == "" {
		return out
	}
	if strings.Count(strings.TrimSpace(stdout), "\n") != 0 {
		t.Fatalf("hook output is not one JSON object: %q", stdout)
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("hook output %q: %v", stdout, err)
	}
	return out
}

// allSessions lists every session, disconnected ones too.
func allSessions(h *H) []map[string]any { return h.Sessions("--scope", "all", "--all") }

func named(rows []map[string]any, name string) []map[string]any {
	var out []map[string]any
	for _, r := range rows {
		if r["name"] == name {
			out = append(out, r)
		}
	}
	return out
}

const claudeSID = "5f0c2a1e-4b5d-4c6e-9f70-0123456789ab"

func TestAgentHooksMCPAndShellAreOneSession(t *testing.T) {
	t.Parallel()
	h := newH(t)
	peer, ev := h.Attach("--name", "peer")
	peerID := ev["id"].(string)
	a := newAgent(t, h, "CLAUDE_CODE_SESSION_ID="+claudeSID, "INTERCOM_NAME=planner")
	in := claudeInput("SessionStart", map[string]any{"session_id": claudeSID, "source": "startup"})
	out, _ := a.Hook("claude", "SessionStart", in)
	if out.HookSpecificOutput == nil || !strings.Contains(out.HookSpecificOutput.AdditionalContext, `"planner"`) {
		t.Fatalf("SessionStart answer %+v", out)
	}
	cs := a.MCP("--harness", "claude")
	text, _, isErr := callTool(t, cs, "intercom", map[string]any{"action": "send", "to": "peer", "message": "from the MCP tool"})
	if isErr || !strings.Contains(text, "Message sent to peer") {
		t.Fatalf("MCP send: %q", text)
	}
	if r := a.Bash("intercom send peer 'from the shell'"); r.Code != 0 {
		t.Fatalf("shell send: exit %d %s", r.Code, r.Stderr)
	}
	for _, want := range []string{"from the MCP tool", "from the shell"} {
		m := peer.Event(20 * time.Second)
		from, _ := m["from"].(map[string]any)
		if m["text"] != want || from["name"] != "planner" || from["id"] != "cc-"+claudeSID {
			t.Fatalf("peer got %v, want %q from planner (cc-%s)", m, want, claudeSID)
		}
	}
	rows := allSessions(h)
	if got := named(rows, "planner"); len(got) != 1 || len(rows) != 2 {
		t.Fatalf("sessions %v: want exactly peer and one planner", rows)
	}
	// An explicit session still wins in the agent's shell.
	if r := a.Bash("INTERCOM_SESSION=" + peerID + " intercom send planner 'explicitly from the peer'"); r.Code != 0 {
		t.Fatalf("explicit send: exit %d %s", r.Code, r.Stderr)
	}
	if r := h.Run("--session", "cc-"+claudeSID, "--json", "inbox", "--peek"); !strings.Contains(r.Stdout, `"explicitly from the peer"`) || !strings.Contains(r.Stdout, peerID) {
		t.Fatalf("explicit --session did not win: %s", r.Stdout)
	}
	h.OK("--session", "cc-"+claudeSID, "inbox")
	// The peer's reply reaches the agent at its next tool boundary, once.
	h.OK("--session", peerID, "send", "planner", "reply to planner")
	post := claudeInput("PostToolUse", map[string]any{"session_id": claudeSID, "tool_name": "mcp__intercom__intercom"})
	out, _ = a.Hook("claude", "PostToolUse", post)
	if out.HookSpecificOutput == nil || strings.Count(out.HookSpecificOutput.AdditionalContext, "reply to planner") != 1 {
		t.Fatalf("PostToolUse after the reply: %+v", out)
	}
	// The hooks deliver for this agent, so the MCP result does not repeat it.
	text, _, _ = callTool(t, cs, "intercom", map[string]any{"action": "status"})
	if strings.Contains(text, "reply to planner") || !strings.Contains(text, "cc-"+claudeSID) {
		t.Fatalf("status result: %q", text)
	}
}

func TestAgentCodexHooksMCPAndShellAreOneSession(t *testing.T) {
	t.Parallel()
	h := newH(t)
	peer, _ := h.Attach("--name", "peer")
	a := newAgent(t, h) // Codex passes no session id in the environment
	in := claudeInput("SessionStart", map[string]any{"session_id": "0199aa-codex-thread", "source": "startup", "cwd": h.Cwd})
	a.Hook("codex", "SessionStart", in)
	cs := a.MCP("--harness", "codex")
	if text, _, isErr := callTool(t, cs, "intercom", map[string]any{"action": "send", "to": "peer", "message": "one"}); isErr {
		t.Fatalf("MCP send: %s", text)
	}
	if r := a.Bash("intercom send peer two"); r.Code != 0 {
		t.Fatalf("shell send: exit %d %s", r.Code, r.Stderr)
	}
	want := "cx-0199aa-codex-thread"
	for range 2 {
		m := peer.Event(20 * time.Second)
		if from, _ := m["from"].(map[string]any); from["id"] != want {
			t.Fatalf("peer got %v from %v, want from %s", m["text"], from, want)
		}
	}
	if rows := allSessions(h); len(rows) != 2 {
		t.Fatalf("sessions %v: want peer and the one agent session", rows)
	}
}

func TestAgentMCPOnlyIsTheShellsSession(t *testing.T) {
	t.Parallel()
	h := newH(t)
	peer, ev := h.Attach("--name", "peer")
	peerID := ev["id"].(string)
	// Claude Code without intercom's hooks: the shell command comes first
	// and finds its harness by CLAUDE_CODE_EXECPATH.
	a := newAgent(t, h, "CLAUDE_CODE_SESSION_ID="+claudeSID, "CLAUDE_CODE_EXECPATH="+fakeHarnessBin(t))
	if r := a.Bash("intercom send peer 'shell first'"); r.Code != 0 {
		t.Fatalf("shell send: exit %d %s", r.Code, r.Stderr)
	}
	cs := a.MCP() // no --harness: Claude Code's environment says it
	if text, _, isErr := callTool(t, cs, "intercom", map[string]any{"action": "send", "to": "peer", "message": "mcp second"}); isErr {
		t.Fatalf("MCP send: %s", text)
	}
	for range 2 {
		m := peer.Event(20 * time.Second)
		if from, _ := m["from"].(map[string]any); from["id"] != "cc-"+claudeSID {
			t.Fatalf("peer got %v from %v", m["text"], from)
		}
	}
	// Without hooks the MCP results carry inbound messages, once.
	h.OK("--session", peerID, "send", "cc-"+claudeSID, "to the agent")
	var seen string
	Eventually(t, 10*time.Second, func() bool {
		text, _, _ := callTool(t, cs, "intercom", map[string]any{"action": "pending"})
		seen += text
		return strings.Contains(seen, "to the agent")
	}, "the message in an MCP result")
	if text, _, _ := callTool(t, cs, "intercom", map[string]any{"action": "pending"}); strings.Contains(text, "to the agent") || strings.Count(seen, "to the agent") != 1 {
		t.Fatalf("message delivered more than once: %q then %q", seen, text)
	}
	if rows := allSessions(h); len(rows) != 2 {
		t.Fatalf("sessions %v: want peer and the one agent session", rows)
	}
}

func TestMCPHealthCheckLeavesNoSession(t *testing.T) {
	t.Parallel()
	h := newH(t)
	h.OK("list") // a broker, and nothing registered
	for _, env := range [][]string{{"CLAUDE_CODE_SESSION_ID=" + claudeSID}, nil} {
		a := newAgent(t, h, env...)
		cs := a.MCP("--harness", "claude")
		if names := toolNames(t, cs); !names["intercom"] {
			t.Fatalf("tools %v", names)
		}
		a.Close()
	}
	if rows := allSessions(h); len(rows) != 0 {
		t.Fatalf("started, listed and closed MCP servers left sessions: %v", rows)
	}
	if ents, _ := os.ReadDir(filepath.Join(h.Home, "agents")); len(ents) != 0 {
		t.Fatalf("bindings left behind: %v", ents)
	}
}

func TestAgentNewHarnessSessionRebinds(t *testing.T) {
	t.Parallel()
	h := newH(t)
	a := newAgent(t, h, "INTERCOM_NAME=rebind")
	a.Hook("claude", "SessionStart", claudeInput("SessionStart", map[string]any{"session_id": "first-conversation"}))
	cs := a.MCP("--harness", "claude")
	if text, _, _ := callTool(t, cs, "intercom", map[string]any{"action": "status"}); !strings.Contains(text, "cc-first-conversation") {
		t.Fatalf("status before /clear: %q", text)
	}
	// /clear: same process, a new harness session.
	a.Hook("claude", "SessionStart", claudeInput("SessionStart", map[string]any{"session_id": "second-conversation", "source": "clear"}))
	if text, _, _ := callTool(t, cs, "intercom", map[string]any{"action": "status"}); !strings.Contains(text, "cc-second-conversation") {
		t.Fatalf("status after /clear: %q", text)
	}
	Eventually(t, 15*time.Second, func() bool {
		rows := allSessions(h)
		old := Row(rows, "rebind")
		connected := 0
		for _, r := range rows {
			if r["connected"] == true {
				connected++
			}
		}
		return len(rows) == 2 && connected == 1 && old != nil
	}, "one connected session after /clear (the old one released)")
	if r := Row(h.Sessions("--scope", "all"), "rebind"); r == nil || r["id"] != "cc-second-conversation" {
		t.Fatalf("connected session %v, want cc-second-conversation", r)
	}
}
