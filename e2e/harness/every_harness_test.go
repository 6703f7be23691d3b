//go:build harness

package harness

import (
	"os"
	"strings"
	"testing"
)

// The hooks, the MCP server and the agent's shell commands act as one
// session, named by INTERCOM_NAME, on the user's INTERCOM_HOME; an MCP
// health check leaves nothing behind. Also with Claude Code started
// through its node launcher and with Codex's bare native binary (one
// process more, or less, above what intercom runs).
func TestOneSessionPerAgent(t *testing.T) {
	viaNode, native := claudeKind, codexKind
	viaNode.name, viaNode.setup = "claude-node-launcher", func(w *World) { w.ClaudeViaNode = true }
	native.name, native.setup = "codex-native", func(w *World) { w.CodexNative = true }
	eachKind(t, []kind{claudeKind, viaNode, claudeOldestKind, codexKind, native, geminiKind}, func(t *testing.T, k kind, w *World, peer *Peer) {
		dir := w.Project("api")
		viaMCP, viaShell := marker("VIA-MCP"), marker("VIA-SHELL")
		m := k.newModel(t)
		var snap Snapshot
		m.Script(
			Turn{Calls: []Call{k.mcp(map[string]any{"action": "send", "to": "peer", "message": viaMCP})}},
			Turn{Calls: []Call{k.shell("intercom send peer " + viaShell)}},
			Turn{Before: w.SnapshotIn(dir, &snap), Text: "sent both"},
		)
		a := k.start(t, w, dir, m, "INTERCOM_NAME=planner")
		a.Turn("tell the peer", "sent both")
		a.Check(t)

		during := snap.Rows()
		if len(during) != 1 {
			t.Fatalf("while the agent worked, intercom list showed %d sessions in its directory, want 1: %+v", len(during), during)
		}
		self := during[0]
		if self.Name != "planner" || !self.Connected {
			t.Errorf("the agent's session is %+v, want connected and named planner (INTERCOM_NAME)", self)
		}
		if ev, ok := peer.WaitMessage(viaMCP, replyWait); !ok {
			t.Errorf("the peer never got the MCP tool's send (the MCP server must use the user's INTERCOM_HOME)")
		} else if from := Sender(ev); from != self.ID {
			t.Errorf("the MCP tool's send came from session %s, want the agent's %s", from, self.ID)
		}
		if ev, ok := peer.WaitMessage(viaShell, replyWait); !ok {
			t.Errorf("the peer never got the shell tool's `intercom send`")
		} else if from := Sender(ev); from != self.ID {
			t.Errorf("`intercom send` in the agent's shell tool came from session %s, want the agent's %s", from, self.ID)
		}
		if r := w.Intercom("", nil, "--session", peer.ID, "send", "planner", marker("BY-NAME")); r.Code != 0 {
			t.Errorf("intercom send planner: exit %d: %s", r.Code, r.Stderr)
		}
		if k.healthCheck != nil {
			k.healthCheck(t, w, dir)
			if after := w.SessionsIn(dir); len(after) != 1 {
				t.Errorf("after the MCP health check, %d sessions in the agent's directory, want 1: %+v", len(after), after)
			}
		}
	})
}

// A message sent to the agent while it is idle and one sent during its
// turn each reach the model exactly once, although the agent also calls
// the MCP tool (which could hand them out again).
func TestMessageReachesModelOnce(t *testing.T) {
	eachKind(t, kinds, func(t *testing.T, k kind, w *World, peer *Peer) {
		dir := w.Project("web")
		idle, busy := marker("IDLE"), marker("BUSY")
		m := k.newModel(t)
		m.Script(Turn{Text: "ready"})
		a := k.start(t, w, dir, m)
		a.Turn("hello", "ready")
		target := w.AgentSession(dir, a.HarnessID()).ID

		peer.Send(target, idle)
		m.Script(
			Turn{Before: func(*Request) { peer.Send(target, busy) }, Calls: []Call{k.shell("echo step one")}},
			Turn{Calls: []Call{k.mcp(map[string]any{"action": "status"})}},
			Turn{Calls: []Call{k.shell("echo step two")}},
			Turn{Text: "all done"},
		)
		a.Turn("carry on", "all done")
		a.Check(t)
		seenOnce(t, m, idle, "message sent while idle")
		seenOnce(t, m, busy, "message sent during a turn")
		if left := w.Pending(target); len(left) != 0 {
			t.Errorf("messages still waiting after delivery: %q", left)
		}
	})
}

// What the agent sends through the MCP tool is answered by the peer, and
// the answer reaches the agent; the model reads the tool's own words (both
// harnesses forward structured content in place of the text, if any).
func TestPeerReplyReachesAgent(t *testing.T) {
	eachKind(t, kinds, func(t *testing.T, k kind, w *World, peer *Peer) {
		question, answer := marker("QUESTION"), marker("ANSWER")
		m := k.newModel(t)
		m.Script(
			Turn{Calls: []Call{k.mcp(map[string]any{"action": "send", "to": "peer", "message": question})}},
			Turn{Before: peer.ReplyWhenAsked(question, answer), Calls: []Call{k.shell("echo waiting for the peer")}},
			Turn{Text: "got it"},
		)
		a := k.start(t, w, w.Project("svc"), m)
		a.Turn("ask the peer", "got it")
		a.Check(t)
		seenOnce(t, m, answer, "the peer's reply")
		main := m.Main()
		if len(main) < 2 {
			t.Fatalf("only %d model requests", len(main))
		}
		if got := lastUserText(main[1]); !strings.Contains(strings.ToLower(got), "sent") {
			t.Errorf("the model did not read the MCP send result's text; it got:\n%s", got)
		}
	})
}

// A message that arrives after the agent's last tool call keeps it working
// once (Stop block); the continued turn is not blocked again, and what
// arrives during it reaches the model exactly once later.
func TestStopBlocksOnce(t *testing.T) {
	eachKind(t, kinds, func(t *testing.T, k kind, w *World, peer *Peer) {
		dir := w.Project("lib")
		first, second := marker("WAKE-ONE"), marker("WAKE-TWO")
		m := k.newModel(t)
		m.Script(Turn{Text: "ready"})
		a := k.start(t, w, dir, m)
		a.Turn("hello", "ready")
		target := w.AgentSession(dir, a.HarnessID()).ID
		i := m.Script(
			Turn{Calls: []Call{k.shell("echo working")}},
			Turn{Before: func(*Request) { peer.Send(target, first) }, Text: "finished"},
			Turn{If: func(r *Request) bool { return strings.Contains(lastUserText(r), first) },
				Before: func(*Request) { peer.Send(target, second) }, Text: "handled the message"},
		)
		a.Turn("do the work", "handled the message")
		a.Check(t)
		start, end := m.Answered(i), m.Answered(i+2)
		if start == nil || end == nil {
			t.Fatal("the scripted turns of this flow were not all answered")
		}
		var turn []*Request
		blocks := 0
		for _, r := range m.Main() {
			if r.N >= start.N && r.N <= end.N {
				turn = append(turn, r)
				if strings.Contains(lastUserText(r), k.stopMark) {
					blocks++
				}
			}
		}
		if blocks != 1 || len(turn) != 3 {
			t.Errorf("Stop blocked %d times over %d model requests, want 1 block over 3 (tool, answer, continued answer)", blocks, len(turn))
		}
		seenOnce(t, m, first, "message that arrived at Stop")

		m.Script(Turn{Text: "noted"})
		a.Turn("anything new?", "noted")
		seenOnce(t, m, second, "message that arrived during the continued turn")
	})
}

// A broken INTERCOM_HOME/config.json makes every hook fail inside, and
// none of them blocks the user's prompt or the turn.
func TestBadConfigNeverBlocks(t *testing.T) {
	eachKind(t, kinds, func(t *testing.T, k kind, w *World, _ *Peer) {
		if err := os.WriteFile(w.IntercomHome+"/config.json", []byte("{ this is not json"), 0o600); err != nil {
			t.Fatal(err)
		}
		prompt := marker("PROMPT")
		m := k.newModel(t)
		m.Script(Turn{Calls: []Call{k.shell("echo still working")}}, Turn{Text: "answered"})
		a := k.start(t, w, w.Project("cfg"), m)
		a.Turn(prompt+" please answer", "answered")
		a.Check(t)
		if first := m.Main(); len(first) == 0 || !first[0].Contains(prompt) {
			t.Errorf("the user's prompt never reached the model")
		}
	})
}

// A message longer than one hook answer holds (~20,000 characters) reaches
// the model whole, over as many boundaries as it needs, and nothing stays
// queued.
func TestLongMessageWhole(t *testing.T) {
	eachKind(t, kinds, func(t *testing.T, k kind, w *World, peer *Peer) {
		dir := w.Project("big")
		body, lines := longBody(marker("LONG"), 200)
		m := k.newModel(t)
		m.Script(Turn{Text: "ready"})
		a := k.start(t, w, dir, m)
		a.Turn("hello", "ready")
		target := w.AgentSession(dir, a.HarnessID()).ID
		peer.Send(target, body)
		m.Script(
			Turn{Calls: []Call{k.shell("echo one")}},
			Turn{Calls: []Call{k.shell("echo two")}},
			Turn{Calls: []Call{k.shell("echo three")}},
			Turn{Calls: []Call{k.shell("echo four")}},
			Turn{Text: "read it all"},
		)
		a.Turn("read your messages", "read it all")
		a.Check(t)
		seenWhole(t, m, lines)
		if left := w.Pending(target); len(left) != 0 {
			t.Errorf("%d messages still waiting after delivery", len(left))
		}
	})
}
