//go:build harness

package harness

import (
	"strings"
	"testing"
)

// docs/agents.md, "two Claude Code sessions and a Codex session
// coordinate": one user, one repository, three agents named with
// INTERCOM_NAME. The planner hands a task to the builder through the MCP
// tool, the builder hands the result to the reviewer with `intercom send`
// from its shell, the reviewer (Codex, between runs meanwhile) answers the
// planner through the MCP tool; each message reaches its model exactly once,
// and the planner's `intercom list --all` shows the three of them.
func TestWalkthroughTwoClaudesAndACodex(t *testing.T) {
	w := NewWorld(t)
	w.InstallClaude() // intercom install claude
	w.InstallCodex()  // intercom install codex
	repo := w.Project("shop")
	task, review, verdict := marker("TASK"), marker("REVIEW"), marker("VERDICT")

	planner, builder, reviewer := NewAnthropic(t), NewAnthropic(t), NewResponses(t)
	builder.Script(Turn{Text: "waiting for work"})
	b := w.StartClaude("builder", repo, builder, "INTERCOM_NAME=builder") // INTERCOM_NAME=builder claude
	b.Turn("you build what the planner asks", "waiting for work", turnTimeout)

	reviewer.Script(Turn{Text: "waiting for reviews"})
	thread := codexTurn(t, w, repo, reviewer, "", "you review what the builder hands over", "INTERCOM_NAME=reviewer").ThreadID() // INTERCOM_NAME=reviewer codex

	planner.Script(
		Turn{Calls: []Call{ClaudeIntercom(map[string]any{"action": "send", "to": "builder", "message": task + ": build the parser"})}},
		Turn{Text: "delegated"},
	)
	p := w.StartClaude("planner", repo, planner, "INTERCOM_NAME=planner") // INTERCOM_NAME=planner claude
	p.Turn("split the work", "delegated", turnTimeout)

	builder.Script(
		Turn{If: func(r *Request) bool { return r.Contains(task) },
			Calls: []Call{Bash("intercom send reviewer '" + review + ": parser ready'")}},
		Turn{Text: "handed to the reviewer"},
	)
	b.Turn("check your messages", "handed to the reviewer", turnTimeout)
	seenOnce(t, builder, task, "the planner's task at the builder")

	reviewer.Script(
		Turn{If: func(r *Request) bool { return r.Contains(review) },
			Calls: []Call{CodexIntercom(map[string]any{"action": "send", "to": "planner", "message": verdict + ": looks good"})}},
		Turn{Text: "reviewed"},
	)
	codexTurn(t, w, repo, reviewer, thread, "anything to review?", "INTERCOM_NAME=reviewer")
	seenOnce(t, reviewer, review, "the builder's hand-over at the reviewer")

	planner.Script(
		Turn{If: func(r *Request) bool { return r.Contains(verdict) }, Calls: []Call{Bash("intercom list --all")}},
		Turn{Text: "all reviewed"},
	)
	p.Turn("status?", "all reviewed", turnTimeout)
	seenOnce(t, planner, verdict, "the reviewer's verdict at the planner")
	// The planner's own `intercom list --all` (the reviewer is between runs: disconnected).
	listed := ""
	if r := planner.Last(); r != nil {
		listed = lastUserText(r)
	}
	if !strings.Contains(listed, "builder") || !strings.Contains(listed, "reviewer") || !strings.Contains(listed, "self") {
		t.Errorf("the planner's `intercom list --all` does not show itself (self) and the other two:\n%s", listed)
	}

	// intercom list: one session per agent, by the names they were given.
	names := map[string]int{}
	for _, s := range w.SessionsIn(repo) {
		names[s.Name]++
	}
	for _, n := range []string{"planner", "builder", "reviewer"} {
		if names[n] != 1 {
			t.Errorf("intercom list shows %d sessions named %s, want 1 (all: %v)", names[n], n, names)
		}
	}
	if len(names) != 3 {
		t.Errorf("intercom list shows sessions %v in the repository, want exactly planner, builder, reviewer", names)
	}
	for _, a := range []*Claude{p, b} {
		noHookFailed(t, a)
		if strings.Contains(a.Log(), "ambiguous") {
			t.Errorf("%s saw an ambiguous target", a.Name)
		}
	}
}
