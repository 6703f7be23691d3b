//go:build harness

package harness

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// claudeWorld is a world with `intercom install claude` done and a peer.
func claudeWorld(t *testing.T) (*World, *Peer) {
	w := NewWorld(t)
	w.InstallClaude()
	return w, w.StartPeer("peer")
}

// noHookFailed fails the test for every hook that exited non-zero.
func noHookFailed(t *testing.T, c *Claude) {
	t.Helper()
	for _, f := range c.HookFailures() {
		t.Errorf("hook failed (Claude Code treats exit 2 as a block): %s", f)
	}
}

// The hooks, the MCP server and the agent's Bash commands act as one
// session, named by INTERCOM_NAME; `claude mcp list` leaves nothing behind.
func TestClaudeOneSessionPerAgent(t *testing.T) {
	w, peer := claudeWorld(t)
	oneSession(t, w, peer)
}

// The same with Claude Code started through its node launcher (an install
// whose postinstall did not run): one more ancestor process.
func TestClaudeOneSessionPerAgentNodeLauncher(t *testing.T) {
	w, peer := claudeWorld(t)
	w.ClaudeViaNode = true
	oneSession(t, w, peer)
}

func oneSession(t *testing.T, w *World, peer *Peer) {
	dir := w.Project("api")
	viaMCP, viaBash := marker("VIA-MCP"), marker("VIA-BASH")
	m := NewAnthropic(t)
	var snap Snapshot
	m.Script(
		Turn{Calls: []Call{ClaudeIntercom(map[string]any{"action": "send", "to": "peer", "message": viaMCP})}},
		Turn{Calls: []Call{Bash("intercom send peer " + viaBash)}},
		Turn{Before: w.SnapshotIn(dir, &snap), Text: "sent both"},
	)
	cl := w.StartClaude("planner", dir, m, "INTERCOM_NAME=planner")
	cl.Turn("tell the peer", "sent both", turnTimeout)
	noHookFailed(t, cl)

	during := snap.Rows()
	if len(during) != 1 {
		t.Fatalf("while the agent worked, intercom list showed %d sessions in its directory, want 1: %+v", len(during), during)
	}
	self := during[0]
	if self.Name != "planner" || !self.Connected {
		t.Errorf("the agent's session is %+v, want connected and named planner (INTERCOM_NAME)", self)
	}
	if from := Sender(peer.AwaitMessage(viaMCP, msgTimeout)); from != self.ID {
		t.Errorf("the MCP tool's send came from session %s, want the agent's %s", from, self.ID)
	}
	if from := Sender(peer.AwaitMessage(viaBash, msgTimeout)); from != self.ID {
		t.Errorf("`intercom send` in the agent's Bash tool came from session %s, want the agent's %s", from, self.ID)
	}
	if r := w.Intercom("", nil, "--session", peer.ID, "send", "planner", marker("BY-NAME")); r.Code != 0 {
		t.Errorf("intercom send planner: exit %d: %s", r.Code, r.Stderr)
	}

	// A health check starts the MCP server and closes it without a call.
	ctx, cancel := withTimeout(2 * time.Minute)
	defer cancel()
	list := exec.CommandContext(ctx, claudeBin, "mcp", "list")
	list.Dir, list.Env = dir, w.Env
	out, err := list.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "intercom") {
		t.Fatalf("claude mcp list: %v\n%s", err, out)
	}
	if after := w.SessionsIn(dir); len(after) != 1 {
		t.Errorf("after `claude mcp list`, %d sessions in the agent's directory, want 1: %+v", len(after), after)
	}
}

// A message sent to the agent while it is idle and one sent during its
// turn each reach the model exactly once, through the hooks, although the
// agent also calls the MCP tool (which could hand them out again).
func TestClaudeMessageReachesModelOnce(t *testing.T) {
	w, peer := claudeWorld(t)
	dir := w.Project("web")
	idle, busy := marker("IDLE"), marker("BUSY")
	m := NewAnthropic(t)
	m.Script(Turn{Text: "ready"})
	cl := w.StartClaude("claude", dir, m)
	cl.Turn("hello", "ready", turnTimeout)
	target := w.AgentSession(dir, cl.SessionID).ID

	peer.Send(target, idle)
	m.Script(
		Turn{Before: func(*Request) { peer.Send(target, busy) }, Calls: []Call{Bash("echo step one")}},
		Turn{Calls: []Call{ClaudeIntercom(map[string]any{"action": "status"})}},
		Turn{Calls: []Call{Bash("echo step two")}},
		Turn{Text: "all done"},
	)
	cl.Turn("carry on", "all done", turnTimeout)
	noHookFailed(t, cl)
	seenOnce(t, m, idle, "message sent while idle")
	seenOnce(t, m, busy, "message sent during a turn")
	if left := w.Pending(target); len(left) != 0 {
		t.Errorf("messages still waiting after delivery: %q", left)
	}
}

// What the agent sends through the MCP tool is answered by the peer, and
// the answer reaches the agent; the model reads the tool's own words.
func TestClaudePeerReplyReachesAgent(t *testing.T) {
	w, peer := claudeWorld(t)
	dir := w.Project("svc")
	question, answer := marker("QUESTION"), marker("ANSWER")
	m := NewAnthropic(t)
	m.Script(
		Turn{Calls: []Call{ClaudeIntercom(map[string]any{"action": "send", "to": "peer", "message": question})}},
		Turn{Before: peer.ReplyWhenAsked(question, answer), Calls: []Call{Bash("echo waiting for the peer")}},
		Turn{Text: "got it"},
	)
	cl := w.StartClaude("claude", dir, m)
	cl.Turn("ask the peer", "got it", turnTimeout)
	noHookFailed(t, cl)
	seenOnce(t, m, answer, "the peer's reply")
	main := m.Main()
	if len(main) < 2 {
		t.Fatalf("only %d model requests", len(main))
	}
	if got := lastUserText(main[1]); !strings.Contains(strings.ToLower(got), "sent") {
		t.Errorf("the model did not read the MCP send result's text (Claude Code forwards structuredContent); it got:\n%s", got)
	}
}

// A message that arrives after the agent's last tool call keeps it working
// once (Stop block); the continued turn is not blocked again, and what
// arrives during it waits for the next prompt.
func TestClaudeStopBlocksOnce(t *testing.T) {
	w, peer := claudeWorld(t)
	dir := w.Project("lib")
	first, second := marker("WAKE-ONE"), marker("WAKE-TWO")
	m := NewAnthropic(t)
	m.Script(Turn{Text: "ready"})
	cl := w.StartClaude("claude", dir, m)
	cl.Turn("hello", "ready", turnTimeout)
	target := w.AgentSession(dir, cl.SessionID).ID
	k := m.Script(
		Turn{Calls: []Call{Bash("echo working")}},
		Turn{Before: func(*Request) { peer.Send(target, first) }, Text: "finished"},
		Turn{If: func(r *Request) bool { return strings.Contains(lastUserText(r), first) },
			Before: func(*Request) { peer.Send(target, second) }, Text: "handled the message"},
	)
	cl.Turn("do the work", "handled the message", turnTimeout)
	noHookFailed(t, cl)
	start, end := m.Answered(k), m.Answered(k+2)
	var turn []*Request
	for _, r := range m.Main() {
		if r.N >= start.N && r.N <= end.N {
			turn = append(turn, r)
		}
	}
	blocks := 0
	for _, r := range turn {
		if strings.Contains(lastUserText(r), "Stop hook feedback") {
			blocks++
		}
	}
	if blocks != 1 || len(turn) != 3 {
		t.Errorf("Stop blocked %d times over %d model requests, want 1 block over 3 (tool, answer, continued answer)", blocks, len(turn))
	}
	seenOnce(t, m, first, "message that arrived at Stop")

	m.Script(Turn{Text: "noted"})
	cl.Turn("anything new?", "noted", turnTimeout)
	seenOnce(t, m, second, "message that arrived during the continued turn")
}

// A broken INTERCOM_HOME/config.json makes every hook fail inside, and
// none of them blocks the user's prompt or the turn.
func TestClaudeBadConfigNeverBlocks(t *testing.T) {
	w := NewWorld(t)
	w.InstallClaude()
	if err := os.WriteFile(w.IntercomHome+"/config.json", []byte("{ this is not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	prompt := marker("PROMPT")
	m := NewAnthropic(t)
	m.Script(Turn{Calls: []Call{Bash("echo still working")}}, Turn{Text: "answered"})
	cl := w.StartClaude("claude", w.Project("cfg"), m)
	cl.Prompt(prompt + " please answer")
	res := cl.AwaitResult(turnTimeout)
	noHookFailed(t, cl)
	if res["result"] != "answered" || res["is_error"] == true {
		t.Errorf("turn result %v, want the model's answer", res)
	}
	if first := m.Main(); len(first) == 0 || !first[0].Contains(prompt) {
		t.Errorf("the user's prompt never reached the model")
	}
	if strings.Contains(cl.Log(), "blocked by hook") {
		t.Errorf("Claude Code reports a hook block:\n%s", tailLines(cl.Log(), 20))
	}
}

// A message longer than one hook answer holds reaches the model whole,
// over as many boundaries as it needs, and nothing stays queued.
func TestClaudeLongMessageWhole(t *testing.T) {
	w, peer := claudeWorld(t)
	dir := w.Project("big")
	body, lines := longBody(marker("LONG"), 200) // ~20,000 characters
	m := NewAnthropic(t)
	m.Script(Turn{Text: "ready"})
	cl := w.StartClaude("claude", dir, m)
	cl.Turn("hello", "ready", turnTimeout)
	target := w.AgentSession(dir, cl.SessionID).ID
	peer.Send(target, body)
	m.Script(
		Turn{Calls: []Call{Bash("echo one")}},
		Turn{Calls: []Call{Bash("echo two")}},
		Turn{Calls: []Call{Bash("echo three")}},
		Turn{Calls: []Call{Bash("echo four")}},
		Turn{Text: "read it all"},
	)
	cl.Turn("read your messages", "read it all", turnTimeout)
	noHookFailed(t, cl)
	seenWhole(t, m, lines)
	if left := w.Pending(target); len(left) != 0 {
		t.Errorf("%d messages still waiting after delivery", len(left))
	}
}

// An idle Claude Code session (its turn over, nobody typing) is woken by a
// steer message: install wires an asyncRewake hook, the message starts a
// new turn and reaches the model exactly once, also after the next prompt.
func TestClaudeIdleAgentWoken(t *testing.T) {
	w, peer := claudeWorld(t)
	dir := w.Project("idle")
	wake := marker("WAKE")
	m := NewAnthropic(t)
	m.Script(Turn{Text: "ready"})
	cl := w.StartClaude("claude", dir, m)
	cl.Turn("hello", "ready", turnTimeout)
	target := w.AgentSession(dir, cl.SessionID).ID

	m.Script(Turn{If: func(r *Request) bool { return strings.Contains(lastUserText(r), wake) }, Text: "woken and handled"})
	peer.Send(target, wake)
	cl.AwaitFinal("woken and handled", replyWait)
	m.Script(Turn{Text: "nothing else"})
	cl.Turn("anything else?", "nothing else", turnTimeout)
	noHookFailed(t, cl)
	seenOnce(t, m, wake, "message that woke the idle agent")
}

// A one-shot `claude -p PROMPT` (scripts, CI) runs its turn with the hooks
// and ends; nothing intercom started for it (a rewake wait, the session
// holder) outlives it.
func TestClaudeOneShotRun(t *testing.T) {
	w, peer := claudeWorld(t)
	dir := w.Project("oneshot")
	note := marker("NOTE")
	m := NewAnthropic(t)
	m.Script(Turn{Calls: []Call{Bash("intercom send peer " + note)}}, Turn{Text: "one shot done"})
	start := time.Now()
	cl := w.RunClaudeOnce("claude", dir, m, "tell the peer and stop")
	t.Logf("claude -p took %s", time.Since(start).Round(100*time.Millisecond))
	noHookFailed(t, cl)
	if n := peer.Messages(note); n != 1 {
		if _, ok := peer.WaitMessage(note, msgTimeout); !ok {
			t.Errorf("the peer never got the one-shot agent's message")
		}
	}
	var left []string
	Await(t, 30*time.Second, func() bool {
		left = w.intercomLeftovers(peer.Pid())
		return len(left) == 0
	}, "the intercom processes started for the one-shot claude to end")
	if len(left) > 0 {
		t.Logf("still running: %q", left)
	}
}
