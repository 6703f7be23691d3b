package runs

import (
	"testing"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// Before the child has recorded its question's ask id, the supervisor's
// pending ask that names the question is the one `agent-runs answer`
// replies to and cancels.
func TestPendingAskOfQuestion(t *testing.T) {
	child := "child-run1"
	mk := func(id, from, qid string) wire.PendingAsk {
		return wire.PendingAsk{AskID: id, From: wire.Peer{ID: from},
			Text: FormatSupervisorMessage("need_decision", "run1", "worker", 1, "subagent-worker", "Which API?", qid)}
	}
	asks := []wire.PendingAsk{
		mk("m-other-question", child, "q-other"),
		mk("m-other-child", "child-run2", "q1"),
		mk("m-q1", child, "q1"),
		{AskID: "m-plain", From: wire.Peer{ID: child}, Text: "Question: q1 is asked in plain text"},
	}
	if got := pendingAskOf(asks, child, "q1"); got != "m-q1" {
		t.Fatalf("ask of q1: %q, want m-q1", got)
	}
	if got := pendingAskOf(asks, child, "q2"); got != "" {
		t.Fatalf("ask of an unasked question: %q, want none", got)
	}
}
