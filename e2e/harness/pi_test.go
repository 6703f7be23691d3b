//go:build harness

package harness

import (
	"fmt"
	"strings"
	"testing"
)

// piWorld is a world with `intercom install pi` done and a peer.
func piWorld(t *testing.T) (*World, *Peer) {
	w := NewWorld(t)
	w.InstallPi()
	return w, w.StartPeer("peer")
}

// pushedDuringTool is a shell command that sends text from session from
// to target and returns once the broker has pushed it to target's holder
// (the Pi extension's child): the message arrives while this tool runs.
func pushedDuringTool(from, target string, texts ...string) string {
	var b strings.Builder
	for _, text := range texts {
		fmt.Fprintf(&b, `id=$(intercom --session %s --json send %s %s | sed -n 's/^{"id":"\([^"]*\)".*/\1/p'); `, from, target, text)
		b.WriteString(`until intercom trace "$id" | grep -q pushed; do sleep 0.1; done; `)
	}
	b.WriteString("echo sent")
	return b.String()
}

// Two messages that arrive while a tool runs reach the model at that tool
// boundary, together in one message (not one request each), each once, and
// are acknowledged only then.
func TestPiSteerAtToolBoundary(t *testing.T) {
	eachPi(t, func(t *testing.T, line PiLine) {
		w, peer := piWorld(t)
		dir := w.Project("steer")
		a, b := marker("FIRST"), marker("SECOND")
		m := NewAnthropic(t)
		pi := w.StartPi("pi", dir, line, m, nil)
		target := pi.Session().ID
		m.Script(
			Turn{Calls: []Call{PiBash(pushedDuringTool(peer.ID, target, a, b))}},
			Turn{Text: "handled both"},
		)
		pi.Prompt("do the work")
		r := m.Answered(1)
		if r == nil {
			t.Fatalf("the model never got the request after the tool\n%s", m.Dump())
		}
		if !strings.Contains(lastUserText(r), "sent") {
			t.Fatalf("request %d is not the one right after the tool result", r.N)
		}
		for _, s := range []string{a, b} {
			if n := userCount(r, s); n != 1 {
				t.Errorf("the request after the tool shows the model %s %d times, want 1", s, n)
			}
		}
		if together := userTurnsHoldingAll(r, a, b); together != 1 {
			t.Errorf("the two messages reached the model in %d shared user turns, want 1 (batched)", together)
		}
		if first := m.Answered(0); first != nil && (userCount(first, a) > 0 || userCount(first, b) > 0) {
			t.Errorf("the first request already held a message sent during the tool")
		}
		if left := w.Pending(target); len(left) != 0 {
			t.Errorf("still waiting after the model received them (not acknowledged): %q", left)
		}
	})
}
