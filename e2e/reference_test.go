package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestNamesWithSpacesAndUnicode: like the reference, a name is any printable
// text. Such sessions are listed, targeted by name for send, ask, reply and
// --session, and the copy-ready reply command quotes them.
func TestNamesWithSpacesAndUnicode(t *testing.T) {
	t.Parallel()
	h := newH(t)
	planner, pev := h.Attach("--name", "my planner")
	worker, wev := h.Attach("--name", "plänner")
	if pev["name"] != "my planner" || wev["name"] != "plänner" || pev["target"] != "my planner" {
		t.Fatalf("attached as %v and %v", pev, wev)
	}
	rows := h.Sessions()
	if Row(rows, "my planner") == nil || Row(rows, "plänner") == nil {
		t.Fatalf("list rows %v", rows)
	}
	h.OK("--session", "my planner", "send", "PLÄNNER", "hello from a spaced name")
	if m := worker.Event(20 * time.Second); m["text"] != "hello from a spaced name" || rsSub(m, "from")["name"] != "my planner" {
		t.Fatalf("plänner got %v", m)
	}
	ask := h.Start("--session", "plänner", "ask", "my planner", "Ready?")
	if m := planner.Event(20 * time.Second); m["text"] != "Ready?" || m["expects_reply"] != true {
		t.Fatalf("my planner got %v", m)
	}
	asks := pendingAsks(h, "my planner")
	if len(asks) != 1 || !strings.Contains(rsStr(asks[0]["reply_command"]), "--session 'my planner' reply --to ") {
		t.Fatalf("pending %v: want a shell-quoted reply command", asks)
	}
	h.OK("--session", "my planner", "reply", "yes")
	<-ask.Done()
	if ask.Cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("ask exit %d: %s", ask.Cmd.ProcessState.ExitCode(), ask.Stderr())
	}
	// Refused: only what would break targeting.
	for _, bad := range []string{" lead", "tab\tname", "bell\a", "-flag", "me@host", "zero\u200bwidth"} {
		res := h.Run("attach", "--name="+bad)
		if res.Code != 2 || !strings.Contains(res.Stderr, "invalid session name") || strings.Count(res.Stderr, "\n") != 1 {
			t.Errorf("attach --name %q: exit %d, stderr %q; want one usage line", bad, res.Code, res.Stderr)
		}
	}
}

// TestPeerBusyAskLeavesNothingPending: an ask refused with peer_busy is
// delivered as a plain message; the recipient has no pending obligation, so
// a later plain reply answers the one real ask instead of "Multiple
// pending asks".
func TestPeerBusyAskLeavesNothingPending(t *testing.T) {
	t.Parallel()
	h := newH(t)
	h.Attach("--name", "asker")
	worker, _ := h.Attach("--name", "worker")
	h.OK("--session", "worker", "state", "thinking") // busy: accepts_asks false
	res := h.Run("--session", "asker", "ask", "worker", "Busy?")
	if res.Code != 1 || !strings.Contains(res.Stderr, "peer_busy") {
		t.Fatalf("ask of a busy peer: exit %d, stderr %q", res.Code, res.Stderr)
	}
	if m := worker.Event(20 * time.Second); m["text"] != "Busy?" || m["expects_reply"] == true {
		t.Fatalf("worker got %v: want the question as a plain message", m)
	}
	if asks := pendingAsks(h, "worker"); len(asks) != 0 {
		t.Fatalf("pending after peer_busy: %v", asks)
	}
	ask := h.Start("--session", "asker", "ask", "--delivery", "steer", "worker", "Now?")
	worker.Event(20 * time.Second)
	Eventually(t, 20*time.Second, func() bool { return len(pendingAsks(h, "worker")) == 1 }, "the steered ask to be pending")
	h.OK("--session", "worker", "reply", "now") // not "Multiple pending asks"
	<-ask.Done()
	if ask.Cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("steered ask: exit %d, %s", ask.Cmd.ProcessState.ExitCode(), ask.Stderr())
	}
}

// TestQueueModeStackAndPassiveAsk: the reference's default queue mode,
// stack, is accepted (every queued message kept), and a passive ask gets
// the domain error, not kong's enum message.
func TestQueueModeStackAndPassiveAsk(t *testing.T) {
	t.Parallel()
	h := newH(t)
	worker, _ := h.Attach("--name", "worker")
	h.OK("--session", "worker", "state", "thinking")
	h.OK("send", "--queue-mode", "stack", "worker", "one")
	h.OK("send", "--queue-mode", "stack", "--delivery", "queue", "worker", "two")
	if res := h.Run("send", "--queue-mode", "stack", "--delivery", "steer", "worker", "x"); res.Code != 2 || !strings.Contains(res.Stderr, "requires --delivery queue") {
		t.Errorf("stack with steer: exit %d, stderr %q", res.Code, res.Stderr)
	}
	h.OK("--session", "worker", "state", "idle")
	for _, want := range []string{"one", "two"} {
		if m := worker.Event(20 * time.Second); m["text"] != want || m["delivery"] != "queue" {
			t.Fatalf("got %v, want queued %q", m, want)
		}
	}
	res := h.Run("ask", "--delivery", "passive", "worker", "x")
	if res.Code != 2 || !strings.Contains(res.Stderr, "passive delivery cannot be used for an ask") || strings.Count(res.Stderr, "\n") != 1 {
		t.Errorf("passive ask: exit %d, stderr %q", res.Code, res.Stderr)
	}
}
