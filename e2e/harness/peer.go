//go:build harness

package harness

import (
	"path/filepath"
	"strings"
	"time"
)

// Peer is an intercom session held by `intercom attach --json` in the
// test: another agent, as far as the harness under test can tell.
type Peer struct {
	*Agent
	w    *World
	ID   string
	name string
}

// StartPeer attaches a session named name in the world's root directory.
func (w *World) StartPeer(name string) *Peer {
	w.t.Helper()
	return w.startPeer(name, nil)
}

// StartAgentPeer is StartPeer for a peer that is an agent, not a person:
// its holder runs with a harness's environment (CLAUDECODE=1), so the
// broker leaves the person mark off its messages (a person's always wake
// and come first in a digest).
func (w *World) StartAgentPeer(name string) *Peer {
	w.t.Helper()
	return w.startPeer(name, []string{"CLAUDECODE=1"})
}

func (w *World) startPeer(name string, env []string) *Peer {
	w.t.Helper()
	a := w.startAgent("peer-"+name, w.Root, nil, env, false, filepath.Join(binDir, "intercom"), "attach", "--name", name, "--json")
	i := a.AwaitEvent(0, 30*time.Second, "attached", func(ev map[string]any) bool { return ev["event"] == "attached" })
	id, _ := a.Events()[i]["id"].(string)
	return &Peer{Agent: a, w: w, ID: id, name: name}
}

// Send sends text from the peer to target. A failure is a test error, so
// a turn's Before may call it.
func (p *Peer) Send(target, text string) {
	p.t.Helper()
	if r := p.w.Intercom("", nil, "--session", p.ID, "send", target, text); r.Code != 0 {
		p.t.Errorf("peer send to %s: exit %d: %s", target, r.Code, r.Stderr)
	}
}

// AwaitMessage waits for a message to the peer whose text holds marker
// and returns its event.
func (p *Peer) AwaitMessage(marker string, timeout time.Duration) map[string]any {
	p.t.Helper()
	i := p.AwaitEvent(0, timeout, "a message holding "+marker, func(ev map[string]any) bool {
		text, _ := ev["text"].(string)
		return ev["event"] == "message" && strings.Contains(text, marker)
	})
	return p.Events()[i]
}

// WaitMessage is AwaitMessage that reports a timeout instead of failing,
// for use off the test goroutine (a model turn's Before).
func (p *Peer) WaitMessage(marker string, timeout time.Duration) (map[string]any, bool) {
	deadline := time.After(timeout)
	for {
		p.mu.Lock()
		evs, ch := p.events, p.changed
		p.mu.Unlock()
		for _, ev := range evs {
			if text, _ := ev["text"].(string); ev["event"] == "message" && strings.Contains(text, marker) {
				return ev, true
			}
		}
		select {
		case <-ch:
		case <-deadline:
			return nil, false
		}
	}
}

// ReplyWhenAsked is a turn's Before: when the peer has the message holding
// question, it sends answer back to its sender. A question that never
// arrives is reported as a test error and the turn goes on.
func (p *Peer) ReplyWhenAsked(question, answer string) func(*Request) {
	return func(*Request) {
		ev, ok := p.WaitMessage(question, replyWait)
		if !ok {
			p.t.Errorf("the peer never received %s", question)
			return
		}
		p.Send(Sender(ev), answer)
	}
}

// Messages counts the messages the peer received whose text holds marker.
func (p *Peer) Messages(marker string) int {
	n := 0
	for _, ev := range p.Events() {
		if text, _ := ev["text"].(string); ev["event"] == "message" && strings.Contains(text, marker) {
			n++
		}
	}
	return n
}

// Sender is the session id a message event came from.
func Sender(ev map[string]any) string {
	from, _ := ev["from"].(map[string]any)
	id, _ := from["id"].(string)
	return id
}
