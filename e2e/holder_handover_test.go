package e2e

import (
	"strings"
	"testing"
	"time"
)

// A harness that resumes a session while the holder of the run before
// still holds it (`codex exec resume` right after `codex exec`, `claude -c`)
// starts no holder of its own: the old holder must go on holding for the new
// harness when its own ends, or the session is detached under the new one
// and the ask it has just made disappears (the asked peer's reply was
// refused with "No active intercom context to reply to" while the asker
// waited until its timeout: the cross-harness matrix's Codex → Pi ask).
func TestHolderHandsOverToResumingHarness(t *testing.T) {
	t.Parallel()
	h := newH(t)
	peer, ev := h.Attach("--name", "peer")
	peerID := ev["id"].(string)
	const sid = "cc-" + claudeSID
	in := claudeInput("SessionStart", map[string]any{"session_id": claudeSID, "source": "resume"})

	first := newAgent(t, h, "CLAUDE_CODE_SESSION_ID="+claudeSID, "INTERCOM_NAME=asker")
	first.Hook("claude", "SessionStart", in)
	second := newAgent(t, h, "CLAUDE_CODE_SESSION_ID="+claudeSID, "INTERCOM_NAME=asker")
	second.Hook("claude", "SessionStart", in)
	if n := len(hookHolders(h)); n != 1 {
		t.Fatalf("%d session holders for one session held by two harness processes, want 1", n)
	}
	first.Close() // the first run ends; its holder notices within a second

	ask := h.Start("--session", sid, "--json", "ask", "--timeout", "60s", peerID, "which port?")
	q := peer.Event(20 * time.Second)
	if q["text"] != "which port?" || q["expects_reply"] != true {
		t.Fatalf("the peer got %v, want the ask", q)
	}
	// Three holder checks (one a second): a holder that lets go detaches
	// the session and retires its ask in that time.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range allSessions(h) {
			if s["id"] == sid && s["connected"] != true {
				t.Fatalf("the session went away under the resumed harness that still runs: %v", s)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r := h.Run("--session", peerID, "reply", "8080"); r.Code != 0 {
		t.Fatalf("the peer's reply to the ask was refused: exit %d: %s", r.Code, r.Stderr)
	}
	if code := ask.ExitCode(30 * time.Second); code != 0 {
		t.Fatalf("ask exited %d: %s", code, ask.Stderr())
	}
	if out, _ := ask.Line(time.Second); !strings.Contains(out, "8080") {
		t.Errorf("the ask's result %q does not hold the reply", out)
	}
	second.Close()
	Eventually(t, 15*time.Second, func() bool { return len(hookHolders(h)) == 0 }, "the holder to exit with the second harness")
}
