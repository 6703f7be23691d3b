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

// codexTurn runs one `codex exec` (a resume of thread when it is set) to
// completion and returns it.
func codexTurn(t *testing.T, w *World, dir string, m *Model, thread, prompt string, env ...string) *Codex {
	t.Helper()
	var flags []string
	if thread != "" {
		flags = []string{"resume", thread}
	}
	cx := w.StartCodexEnv("codex", dir, m, prompt, env, flags...)
	cx.Finish(turnTimeout)
	return cx
}

// The hooks, the MCP server and the agent's shell commands act as one
// session, named by INTERCOM_NAME, on the user's INTERCOM_HOME.
func TestCodexOneSessionPerAgent(t *testing.T) {
	w, peer := codexWorld(t)
	codexOneSession(t, w, peer)
}

// The same with Codex's native binary run directly (a standalone install,
// no npm launcher above it).
func TestCodexOneSessionPerAgentNative(t *testing.T) {
	w, peer := codexWorld(t)
	w.CodexNative = true
	codexOneSession(t, w, peer)
}

func codexOneSession(t *testing.T, w *World, peer *Peer) {
	dir := w.Project("api")
	viaMCP, viaShell := marker("VIA-MCP"), marker("VIA-SHELL")
	m := NewResponses(t)
	var snap Snapshot
	m.Script(
		Turn{Calls: []Call{CodexIntercom(map[string]any{"action": "send", "to": "peer", "message": viaMCP})}},
		Turn{Calls: []Call{Shell("intercom send peer " + viaShell)}},
		Turn{Before: w.SnapshotIn(dir, &snap), Text: "sent both"},
	)
	codexTurn(t, w, dir, m, "", "tell the peer", "INTERCOM_NAME=reviewer")
	during := snap.Rows()
	if len(during) != 1 {
		t.Fatalf("while the agent worked, intercom list showed %d sessions in its directory, want 1: %+v", len(during), during)
	}
	self := during[0]
	if self.Name != "reviewer" || !self.Connected {
		t.Errorf("the agent's session is %+v, want connected and named reviewer (INTERCOM_NAME)", self)
	}
	if n := peer.Messages(viaMCP); n != 1 {
		t.Errorf("the peer got the MCP tool's send %d times, want 1 (the MCP server must use the user's INTERCOM_HOME)", n)
	} else if from := Sender(peer.AwaitMessage(viaMCP, msgTimeout)); from != self.ID {
		t.Errorf("the MCP tool's send came from session %s, want the agent's %s", from, self.ID)
	}
	if from := Sender(peer.AwaitMessage(viaShell, msgTimeout)); from != self.ID {
		t.Errorf("`intercom send` in the agent's shell tool came from session %s, want the agent's %s", from, self.ID)
	}
}

// A message sent while the agent is idle (between runs) and one sent during
// a run each reach the model exactly once.
func TestCodexMessageReachesModelOnce(t *testing.T) {
	w, peer := codexWorld(t)
	dir := w.Project("web")
	idle, busy := marker("IDLE"), marker("BUSY")
	m := NewResponses(t)
	m.Script(Turn{Text: "ready"})
	thread := codexTurn(t, w, dir, m, "", "hello").ThreadID()
	target := w.AgentSession(dir, thread).ID

	peer.Send(target, idle)
	m.Script(
		Turn{Before: func(*Request) { peer.Send(target, busy) }, Calls: []Call{Shell("echo step one")}},
		Turn{Calls: []Call{CodexIntercom(map[string]any{"action": "status"})}},
		Turn{Calls: []Call{Shell("echo step two")}},
		Turn{Text: "all done"},
	)
	codexTurn(t, w, dir, m, thread, "carry on")
	seenOnce(t, m, idle, "message sent while idle")
	seenOnce(t, m, busy, "message sent during a run")
	if left := w.Pending(target); len(left) != 0 {
		t.Errorf("messages still waiting after delivery: %q", left)
	}
}

// What the agent sends through the MCP tool is answered by the peer, and
// the answer reaches the agent; the model reads the tool's own words.
func TestCodexPeerReplyReachesAgent(t *testing.T) {
	w, peer := codexWorld(t)
	dir := w.Project("svc")
	question, answer := marker("QUESTION"), marker("ANSWER")
	m := NewResponses(t)
	m.Script(
		Turn{Calls: []Call{CodexIntercom(map[string]any{"action": "send", "to": "peer", "message": question})}},
		Turn{Before: peer.ReplyWhenAsked(question, answer), Calls: []Call{Shell("echo waiting for the peer")}},
		Turn{Text: "got it"},
	)
	codexTurn(t, w, dir, m, "", "ask the peer")
	seenOnce(t, m, answer, "the peer's reply")
	main := m.Main()
	if len(main) < 2 {
		t.Fatalf("only %d model requests", len(main))
	}
	if got := lastUserText(main[1]); !strings.Contains(strings.ToLower(got), "sent") {
		t.Errorf("the model did not read the MCP send result's text (Codex forwards structured_content); it got:\n%s", got)
	}
}

// A message that arrives after the agent's last tool call keeps it working
// once (Stop block); the continued turn is not blocked again, and what
// arrives during it waits for the next run.
func TestCodexStopBlocksOnce(t *testing.T) {
	w, peer := codexWorld(t)
	dir := w.Project("lib")
	first, second := marker("WAKE-ONE"), marker("WAKE-TWO")
	m := NewResponses(t)
	m.Script(Turn{Text: "ready"})
	thread := codexTurn(t, w, dir, m, "", "hello").ThreadID()
	target := w.AgentSession(dir, thread).ID
	m.Script(
		Turn{Calls: []Call{Shell("echo working")}},
		Turn{Before: func(*Request) { peer.Send(target, first) }, Text: "finished"},
		Turn{If: func(r *Request) bool { return strings.Contains(lastUserText(r), first) },
			Before: func(*Request) { peer.Send(target, second) }, Text: "handled the message"},
	)
	before := len(m.Main())
	cx := codexTurn(t, w, dir, m, thread, "do the work")
	turn := m.Main()[before:]
	if len(turn) != 3 {
		t.Errorf("the run made %d model requests, want 3 (tool, answer, answer to one Stop block)", len(turn))
	}
	if m.Used() != 4 {
		t.Errorf("the model answered %d scripted turns, want 4: the Stop block never reached it", m.Used())
	}
	seenOnce(t, m, first, "message that arrived at Stop")
	if !strings.Contains(cx.Log(), "handled the message") {
		t.Errorf("the run did not end with the answer to the Stop block")
	}

	m.Script(Turn{Text: "noted"})
	codexTurn(t, w, dir, m, thread, "anything new?")
	seenOnce(t, m, second, "message that arrived during the continued turn")
}

// A broken INTERCOM_HOME/config.json never blocks the prompt or the run.
func TestCodexBadConfigNeverBlocks(t *testing.T) {
	w := NewWorld(t)
	w.InstallCodex()
	if err := os.WriteFile(w.IntercomHome+"/config.json", []byte("{ this is not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	prompt := marker("PROMPT")
	m := NewResponses(t)
	m.Script(Turn{Calls: []Call{Shell("echo still working")}}, Turn{Text: "answered"})
	cx := codexTurn(t, w, w.Project("cfg"), m, "", prompt+" please answer")
	if first := m.Main(); len(first) == 0 || !first[0].Contains(prompt) {
		t.Errorf("the user's prompt never reached the model")
	}
	if m.Used() != 2 || !strings.Contains(cx.Log(), "answered") {
		t.Errorf("the run did not complete its turn (%d scripted turns used)", m.Used())
	}
}

// A message longer than one hook answer holds reaches the model whole,
// over as many boundaries as it needs, and nothing stays queued.
func TestCodexLongMessageWhole(t *testing.T) {
	w, peer := codexWorld(t)
	dir := w.Project("big")
	body, lines := longBody(marker("LONG"), 200)
	m := NewResponses(t)
	m.Script(Turn{Text: "ready"})
	thread := codexTurn(t, w, dir, m, "", "hello").ThreadID()
	target := w.AgentSession(dir, thread).ID
	peer.Send(target, body)
	m.Script(
		Turn{Calls: []Call{Shell("echo one")}},
		Turn{Calls: []Call{Shell("echo two")}},
		Turn{Calls: []Call{Shell("echo three")}},
		Turn{Calls: []Call{Shell("echo four")}},
		Turn{Text: "read it all"},
	)
	codexTurn(t, w, dir, m, thread, "read your messages")
	seenWhole(t, m, lines)
	if left := w.Pending(target); len(left) != 0 {
		t.Errorf("%d messages still waiting after delivery", len(left))
	}
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
	ours := func(cmd string) bool { return strings.Contains(cmd, binDir) && strings.Contains(cmd, " hook codex ") }
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
