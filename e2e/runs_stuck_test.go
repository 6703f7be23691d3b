package e2e

// Stuck children (issue 35 item 4): the broker marks a session stuck when
// it stays busy with no boundary past INTERCOM_STUCK_AFTER; list, status
// and --json show it; the run owner tells the supervisor once per stall
// and, with --on-stuck, nudges, interrupts and restarts the child, each
// once, recording every step in the run's status and history. The child is
// a real shell script that reports tool:bash and hangs; everything else is
// the real binaries.

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/intercom-dev/intercom/internal/runs"
)

// rsStuckRun starts the hanging child script (rsHang or rsDie; agent
// worker, start's flags before --) under an attached supervisor "sup" on a home with small
// stall thresholds (busy 1.5s with no boundary, 2s between ladder steps,
// waiting steers never a stall) and awaits the supervisor's stuck notice.
func rsStuckRun(t *testing.T, script string, flags ...string) rsStuck {
	t.Helper()
	s := rsStuck{h: rsH(t)}
	h := s.h
	h.Env = append(h.Env, "INTERCOM_STUCK_AFTER=1500ms", "INTERCOM_STUCK_STEP_AFTER=2s", "INTERCOM_STUCK_STEERS_AFTER=0")
	s.sup, _ = h.Attach("--name", "sup")
	path := rsScript(t, h.Cwd, "hang.sh", script)
	s.id = rsStart(t, h, h.Cwd, "sup", append(append([]string{"--agent", "worker"}, flags...), "--", "/bin/sh", path)...)
	s.child, s.firstPid = "subagent-worker-"+s.id, rsLoad(t, h, s.id).ChildPid
	m := rsNextMessage(t, s.sup)
	s.notice = rsStr(m["text"])
	rsCheckHeader(t, s.notice, "Subagent looks stuck.", s.id, "worker", 0, s.child)
	if !strings.Contains(s.notice, "Stuck: busy in tool:bash since ") || m["delivery"] != "steer" {
		t.Fatalf("stuck notice: %v", m)
	}
	return s
}

// rsStuck is a run of rsStuckRun: its home, supervisor, run id, child
// session name, the child's first pid and the stuck notice's text.
type rsStuck struct {
	h                 *H
	sup               *Proc
	id, child, notice string
	firstPid          int
}

// rsHang is a child that reports tool:bash and hangs, saying so when
// interrupted; restarted (with a hand-off note) it prints the note's first
// line and completes.
const rsHang = `
if [ -n "${INTERCOM_HANDOFF_FILE:-}" ]; then
  echo "restarted: $(head -n 1 "$INTERCOM_HANDOFF_FILE")"
  exit 0
fi
intercom state tool:bash >/dev/null || echo "state failed"
trap 'echo "interrupted"' INT
echo "hanging"
while :; do sleep 1000 & wait $!; done
`

// rsDie is rsHang ended by the interrupt (exit 130), as pi -p is.
const rsDie = `
if [ -n "${INTERCOM_HANDOFF_FILE:-}" ]; then
  echo "restarted: $(head -n 1 "$INTERCOM_HANDOFF_FILE")"
  exit 0
fi
intercom state tool:bash >/dev/null || echo "state failed"
trap 'echo "interrupted"; exit 130' INT
echo "hanging"
while :; do sleep 1000 & wait $!; done
`

// rsStuckRow awaits the child's row marked stuck in `intercom list --json`.
func rsStuckRow(t *testing.T, h *H, child string) map[string]any {
	t.Helper()
	var row map[string]any
	Eventually(t, rsWait, func() bool {
		row = Row(h.Sessions("--scope", "all"), child)
		return row != nil && row["stuck_since"] != nil
	}, "%s to show as stuck", child)
	if row["stuck_reason"] != "busy" || row["state"] != "busy" || row["status"] != "tool:bash" {
		t.Fatalf("stuck row: %v", row)
	}
	return row
}

// A hanging child with no ladder: its row shows stuck (state still busy)
// in list, status and --json; the supervisor gets exactly one notice for
// the stall however long it lasts, and nothing is done to the child.
func TestRunsStuckChildNoticedOnce(t *testing.T) {
	t.Parallel()
	s := rsStuckRun(t, rsHang)
	h, sup, id, child := s.h, s.sup, s.id, s.child
	rsAwaitOutput(t, h, id, "hanging", rsWait)
	rsStuckRow(t, h, child)
	// The stall lasts: the broker's own count of it passes four times the
	// threshold (the owner looks every quarter of it), still one stall.
	Eventually(t, rsWait, func() bool {
		row := Row(h.Sessions("--scope", "all"), child)
		n, _ := row["stuck_seconds"].(float64)
		return n >= 6
	}, "%s stuck for 6s", child)
	for _, args := range [][]string{{"list", "--scope", "all"}, {"status", "--scope", "all"}} {
		out := h.OK(args...)
		line := ""
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, child) {
				line = l
			}
		}
		if !strings.Contains(line, "stuck ") || !strings.Contains(line, "(tool:bash)") || !strings.Contains(line, "state:busy") {
			t.Fatalf("intercom %s shows the child as %q\n%s", args[0], line, out)
		}
	}
	r := rsLoad(t, h, id)
	if r.Stall == nil || r.Stall.Number != 1 || len(r.Stall.Steps) != 0 || r.Restarts != 0 || len(r.History) != 1 || r.History[0].Kind != runs.EventStuck {
		t.Fatalf("run while stuck: stall %+v history %+v restarts %d", r.Stall, r.History, r.Restarts)
	}
	if out := rsOutput(h, id); strings.Contains(out, "interrupted") {
		t.Fatalf("a child with no ladder was interrupted:\n%s", out)
	}
	status := rsOK(t, h, h.Cwd, "status", id)
	if !strings.Contains(status, "stuck: stall 1, busy in tool:bash") || !strings.Contains(status, "stall 1 stuck: busy in tool:bash") {
		t.Fatalf("agent-runs status:\n%s", status)
	}
	// The next message after the notice is the completion notice: no second
	// stuck notice came meanwhile.
	rsOK(t, h, h.Cwd, "stop", id, "--grace", "1s")
	if next := rsStr(rsNextMessage(t, sup)["text"]); !strings.HasPrefix(next, "Subagent run finished.") {
		t.Fatalf("after the stuck notice the supervisor got %q", next)
	}
}

// TestRunsStuckLadderOnceEach: a hanging child under --on-stuck
// nudge,interrupt,restart is nudged (a steer in its inbox), interrupted
// (SIGINT reaches its shell) and restarted from its saved launch with a
// hand-off note, exactly once each; the steps are in agent-runs status
// --json and its text; the supervisor gets one stuck notice, then the
// completion notice of the restarted child.
func TestRunsStuckLadderOnceEach(t *testing.T) {
	t.Parallel()
	s := rsStuckRun(t, rsHang, "--on-stuck", "nudge,interrupt,restart")
	h, sup, id, first := s.h, s.sup, s.id, s.firstPid
	if !strings.Contains(s.notice, "On stuck: nudge, then interrupt, then restart; each once for this stall") {
		t.Fatalf("stuck notice: %q", s.notice)
	}
	done := rsAwaitRun(t, h, id, "completed after the restart", rsFinished(runs.StateCompleted))
	if next := rsStr(rsNextMessage(t, sup)["text"]); !strings.HasPrefix(next, "Subagent run finished.") || !strings.Contains(next, "State: completed") {
		t.Fatalf("after the stuck notice the supervisor got %q", next)
	}

	var st struct {
		Run struct {
			*runs.Run
		} `json:"run"`
	}
	rsJSON(t, h, &st, "status", id)
	got := st.Run.Run
	if got == nil || got.Restarts != 1 || done.Restarts != 1 || got.ChildPid == first || got.Stall != nil ||
		strings.Join(got.OnStuck, ",") != "nudge,interrupt,restart" {
		t.Fatalf("status --json after the ladder: %+v", got)
	}
	count := map[string]int{}
	var order []string
	for _, ev := range got.History {
		if ev.Stall != 1 {
			t.Fatalf("history event of another stall: %+v", ev)
		}
		count[ev.Kind]++
		if ev.Kind != runs.EventReset {
			order = append(order, ev.Kind)
		}
	}
	if strings.Join(order, ",") != "stuck,nudge,interrupt,restart" || count[runs.EventReset] > 1 {
		t.Fatalf("history %+v", got.History)
	}
	out := rsOutput(h, id)
	for s, n := range map[string]int{"hanging": 1, "interrupted": 1, "restarted: Hand-off: agent-runs restarted this run (" + id: 1, "state failed": 0} {
		if c := strings.Count(out, s); c != n {
			t.Fatalf("output has %q %d times, want %d:\n%s", s, c, n, out)
		}
	}
	note, err := os.ReadFile(rsStore(h).RunDir(id) + "/handoff-1.md")
	if err != nil || !strings.Contains(string(note), "steps taken: nudge, interrupt, restart") || !strings.Contains(string(note), "hanging") {
		t.Fatalf("hand-off note: %q, %v", note, err)
	}
	text := rsOK(t, h, h.Cwd, "status", id)
	for _, want := range []string{"on stuck: nudge,interrupt,restart", "restarts: 1", "stall 1 nudge: steer ", "stall 1 interrupt: SIGINT to process group " + fmt.Sprint(first), "stall 1 restart: SIGTERM"} {
		if !strings.Contains(text, want) {
			t.Fatalf("agent-runs status lacks %q:\n%s", want, text)
		}
	}
	// The nudge and the hand-off reached the child's inbox, once each.
	var inbox struct {
		Messages []map[string]any `json:"messages"`
	}
	h.JSON(&inbox, "--session", "child-"+id, "inbox", "--peek")
	nudges, handoffs := 0, 0
	for _, m := range inbox.Messages {
		text := rsStr(m["text"])
		nudges += strings.Count(text, "You look stuck: busy in tool:bash")
		if strings.HasPrefix(text, "Hand-off:") {
			handoffs++
		}
	}
	if nudges != 1 || handoffs != 1 {
		t.Fatalf("child inbox: %d nudges, %d hand-offs: %v", nudges, handoffs, inbox.Messages)
	}
}

// A hanging child that the interrupt ends (exit 130, as pi -p ends on
// SIGINT) is restarted at once, the restart being next on the ladder: no
// SIGTERM, one restart, and the run completes; the supervisor gets the
// stuck notice, then the completion notice.
func TestRunsStuckChildEndedByInterruptRestarted(t *testing.T) {
	t.Parallel()
	s := rsStuckRun(t, rsDie, "--on-stuck", "nudge,interrupt,restart")
	h, sup, id := s.h, s.sup, s.id
	done := rsAwaitRun(t, h, id, "completed after the restart", rsFinished(runs.StateCompleted))
	if next := rsStr(rsNextMessage(t, sup)["text"]); !strings.HasPrefix(next, "Subagent run finished.") || !strings.Contains(next, "State: completed") {
		t.Fatalf("after the stuck notice the supervisor got %q", next)
	}
	var order []string
	for _, ev := range done.History {
		if ev.Kind == runs.EventReset {
			continue
		}
		order = append(order, ev.Kind)
		if ev.Kind == runs.StepRestart && !strings.Contains(ev.Detail, "the child exited after the interrupt (exit status 130)") {
			t.Fatalf("restart detail %q", ev.Detail)
		}
	}
	if strings.Join(order, ",") != "stuck,nudge,interrupt,restart" || done.Restarts != 1 {
		t.Fatalf("history %+v, restarts %d", done.History, done.Restarts)
	}
	out := rsOutput(h, id)
	for s, n := range map[string]int{"hanging": 1, "interrupted": 1, "restarted: Hand-off: agent-runs restarted this run (" + id: 1} {
		if c := strings.Count(out, s); c != n {
			t.Fatalf("output has %q %d times, want %d:\n%s", s, c, n, out)
		}
	}
}
