//go:build harness

package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// openCodeWorld is a world with `intercom install opencode` done for model,
// and a peer.
func openCodeWorld(t *testing.T) (*World, *Model, *Peer) {
	m := NewChatCompletions(t)
	w := NewWorld(t)
	w.InstallOpenCode(m)
	return w, m, w.StartPeer("peer")
}

// gate is a shell command that waits for its file, so a test can act while
// OpenCode's bash tool is running; open lets it finish.
func gate(dir string) (command string, open func()) {
	path := filepath.Join(dir, "gate-"+marker("G"))
	return "while [ ! -e " + path + " ]; do sleep 0.05; done; echo gate open", func() { _ = os.WriteFile(path, nil, 0o644) }
}

// awaitStatus waits until session id reports status.
func (w *World) awaitStatus(id, status string) {
	w.t.Helper()
	Await(w.t, msgTimeout, func() bool {
		for _, s := range w.Sessions() {
			if s.ID == id && s.Status == status {
				return true
			}
		}
		return false
	}, "session %s to report %s", id, status)
}

// A message that arrives while the bash tool runs reaches the model inside
// that tool's result, once, and the session reported tool:bash meanwhile.
func TestOpenCodeDeliversAtToolBoundary(t *testing.T) {
	w, m, peer := openCodeWorld(t)
	dir := w.Project("boundary")
	msg := marker("BOUNDARY")
	cmd, open := gate(dir)
	m.Script(
		Turn{Calls: []Call{OpenCodeBash(cmd)}},
		Turn{If: func(r *Request) bool { return r.Contains(msg) }, Text: "got it"},
	)
	oc := w.RunOpenCode("oc", dir, m, "run the gate")
	id := ""
	Await(t, turnTimeout, func() bool { id = oc.SessionID(); return id != "" }, "the run's session id")
	sid := intercomSession(id)
	w.awaitStatus(sid, "tool:bash")
	peer.Send(sid, msg)
	open()
	oc.Finish(turnTimeout)
	seenOnce(t, m, msg, "message at the tool boundary")
	if r := m.Answered(1); r == nil || !toolResultHolds(r, msg) {
		t.Errorf("the message did not come inside the bash tool's result")
	}
	if left := w.Pending(sid); len(left) != 0 {
		t.Errorf("messages still waiting after delivery: %q", left)
	}
}

// toolResultHolds reports whether a tool message of r holds s.
func toolResultHolds(r *Request, s string) bool {
	msgs, _ := r.JSON["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		if mm["role"] == "tool" && strings.Contains(mustJSON(mm["content"]), s) {
			return true
		}
	}
	return false
}
