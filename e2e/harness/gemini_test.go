//go:build harness

package harness

import (
	"slices"
	"strings"
	"testing"
)

// A message that arrives while Gemini CLI runs a tool reaches the model
// in that tool's result (AfterTool), exactly once.
func TestGeminiToolBoundaryDelivery(t *testing.T) {
	w := NewWorld(t)
	w.InstallGemini()
	peer := w.StartPeer("peer")
	dir := w.Project("gm")
	busy := marker("BUSY")
	m := NewGemini(t)
	g := geminiKind.start(t, w, dir, m).(*geminiSession)
	target := "gm-" + g.id
	m.Script(
		Turn{Before: func(*Request) { peer.Send(target, busy) }, Calls: []Call{GeminiShell("echo step one")}},
		Turn{Calls: []Call{GeminiShell("echo step two")}},
		Turn{Text: "all done"},
	)
	g.Turn("work", "all done")
	g.Check(t)
	seenOnce(t, m, busy, "message sent during a turn")
	if left := w.Pending(target); len(left) != 0 {
		t.Errorf("messages still waiting after delivery: %q", left)
	}
}

// A message sent while no gemini runs waits in the chat's inbox; `gemini
// -r ID` resumes the chat as the same intercom session (gm-<id>, one in
// the directory) and hands the message to the model exactly once, with
// the chat's history (the model's earlier answer) before it.
func TestGeminiResumeKeepsSessionAndMail(t *testing.T) {
	w := NewWorld(t)
	w.InstallGemini()
	peer := w.StartPeer("peer")
	dir := w.Project("resume")
	ready, mail := marker("READY"), marker("MAIL")
	m := NewGemini(t)
	g := geminiKind.start(t, w, dir, m).(*geminiSession)
	m.Script(Turn{Text: ready})
	g.Turn("hello", ready)
	before := w.AgentSession(dir, g.id)
	if want := "gm-" + g.id; before.ID != want {
		t.Fatalf("the Gemini chat's session is %s, want %s", before.ID, want)
	}
	peer.Send(before.ID, mail)
	if left := w.Pending(before.ID); len(left) != 1 {
		t.Fatalf("%d messages wait for the stopped chat, want 1", len(left))
	}

	var snap Snapshot
	i := m.Script(Turn{Before: w.SnapshotIn(dir, &snap), Calls: []Call{GeminiShell("intercom send peer back-again")}}, Turn{Text: "resumed"})
	g.Turn("carry on", "resumed")
	g.Check(t)
	if rows := snap.Rows(); len(rows) != 1 || rows[0].ID != before.ID || !rows[0].Connected {
		t.Errorf("while the resumed chat worked, sessions in its directory: %+v, want only %s, connected", rows, before.ID)
	}
	if r := m.Answered(i); r == nil || !r.Contains(ready) {
		t.Errorf("the resumed run's first request does not hold the chat's history (the answer %s)", ready)
	}
	seenOnce(t, m, mail, "message sent while the chat was not running")
	if ev, ok := peer.WaitMessage("back-again", replyWait); !ok {
		t.Errorf("the peer never got the resumed agent's `intercom send`")
	} else if from := Sender(ev); from != before.ID {
		t.Errorf("the resumed agent's `intercom send` came from %s, want %s", from, before.ID)
	}
	if left := w.Pending(before.ID); len(left) != 0 {
		t.Errorf("messages still waiting after the resume: %q", left)
	}
}

// With `install gemini --hold`, an agent whose turn is over (its AfterAgent
// hook waiting, nobody typing) is woken by a steer message: the turn
// continues with it, the model sees it once, and the continued turn's
// AfterAgent (stop_hook_active) does not hold again, so `gemini -p` ends.
func TestGeminiHoldWakesIdleAgent(t *testing.T) {
	w := NewWorld(t)
	w.InstallGeminiWith("--hold", "10m")
	peer := w.StartPeer("peer")
	dir := w.Project("hold")
	wake := marker("WAKE")
	m := NewGemini(t)
	id := newUUID()
	target := "gm-" + id
	m.Script(Turn{Text: "ready"}, Turn{If: func(r *Request) bool { return strings.Contains(lastUserText(r), wake) }, Text: "woken and handled"})
	g := w.RunGemini("gemini", dir, m, "hello", nil, "--session-id", id)
	Await(t, turnTimeout, func() bool {
		if m.Used() < 1 || !w.holding() {
			return false
		}
		for _, s := range w.SessionsIn(dir) {
			if s.ID == target && s.Status == "idle" {
				return true
			}
		}
		return false
	}, "the agent's turn to end in a holding AfterAgent hook")
	peer.Send(target, wake)
	g.Finish(turnTimeout)
	if got := g.AssistantText(); !strings.HasSuffix(got, "woken and handled") {
		t.Fatalf("the run ended with %q, want the woken turn's answer", got)
	}
	(&geminiSession{runs: []*Gemini{g}}).Check(t)
	seenOnce(t, m, wake, "message that woke the idle agent")
}

// holding reports whether one of the world's `intercom hook gemini
// AfterAgent --hold` runs is waiting.
func (w *World) holding() bool {
	mine := pidsMentioning("INTERCOM_HOME=" + w.IntercomHome + "\x00")
	for _, p := range pidsMentioning("AfterAgent\x00--hold") {
		if slices.Contains(mine, p) {
			return true
		}
	}
	return false
}
