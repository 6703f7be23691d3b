//go:build harness

package harness

import (
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
