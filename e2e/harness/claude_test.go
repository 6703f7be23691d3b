//go:build harness

package harness

import (
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

// An idle Claude Code session (its turn over, nobody typing) is woken by a
// steer message: install wires an asyncRewake hook, the message starts a
// new turn and reaches the model exactly once, also after the next prompt.
// Both on the current release and on the oldest supported one.
func TestClaudeIdleAgentWoken(t *testing.T) {
	for _, v := range []struct{ name, bin string }{{claudePin.Version, claudeBin}, {claudeOldestPin.Version, claudeOldestBin}} {
		t.Run(v.name, func(t *testing.T) {
			w, peer := claudeWorld(t)
			w.ClaudeBin = v.bin
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
		})
	}
}

// A message that waits when a turn ends reaches Claude Code's model once:
// the Stop hook continues the turn with it as Stop additionalContext (a
// block reason 2.1.332 shows the model twice). In a one-shot `claude -p`
// no rewake wait runs, so the Stop hook is what delivers it. Both on the
// current release and on the oldest supported one.
func TestClaudeStopContinuesOnce(t *testing.T) {
	for _, v := range []struct{ name, bin string }{{claudePin.Version, claudeBin}, {claudeOldestPin.Version, claudeOldestBin}} {
		t.Run(v.name, func(t *testing.T) {
			w, peer := claudeWorld(t)
			w.ClaudeBin = v.bin
			dir := w.Project("stop")
			msg := marker("AT-STOP")
			m := NewAnthropic(t)
			m.Script(
				Turn{Calls: []Call{Bash("echo working")}},
				Turn{Before: func(*Request) { // after the last tool boundary, before Stop
					rows, err := w.listSessions()
					if here := inDir(rows, dir); err == nil && len(here) == 1 {
						peer.Send(here[0].ID, msg)
					} else {
						t.Errorf("the agent's session in %s: %v (%d found)", dir, err, len(here))
					}
				}, Text: "finished"},
				Turn{If: func(r *Request) bool { return strings.Contains(lastUserText(r), msg) }, Text: "handled"},
			)
			c := w.RunClaudeOnce("claude", dir, m, "do the work")
			noHookFailed(t, c)
			cont := m.Answered(2)
			if cont == nil {
				t.Fatalf("the turn was not continued with the message\n%s", m.Dump())
			}
			if !strings.Contains(lastUserText(cont), "Stop hook additional context") {
				t.Errorf("the message came otherwise than as the Stop hook's additionalContext: %.600q", lastUserText(cont))
			}
			seenOnce(t, m, msg, "message that waited at Stop")
		})
	}
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
