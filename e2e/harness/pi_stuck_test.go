//go:build harness

package harness

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intercom-dev/intercom/internal/runs"
)

// A real Pi child under `agent-runs start --on-stuck nudge,interrupt,restart`
// whose model never answers stays 'thinking' with no boundary: the
// supervisor gets one stuck notice, the child is nudged, then interrupted
// (the SIGINT ends pi -p, dropping the hung request) and restarted from
// its saved launch with the hand-off note (INTERCOM_HANDOFF_FILE and a
// steer), exactly once each; the restarted Pi's model answers, it reads
// the note and finishes, and the supervisor's next message is the
// completion notice. The thresholds leave Pi's start out of the stall: the
// extension reports each boundary of a run's child with `intercom state`
// (the restarted Pi's bash tool sees its row say tool:bash).
func TestPiStuckChildNudgedInterruptedRestartedOnce(t *testing.T) {
	eachPi(t, func(t *testing.T, line PiLine) {
		w := NewWorld(t)
		w.Env = append(w.Env, "INTERCOM_STUCK_AFTER=8s", "INTERCOM_STUCK_STEP_AFTER=2s", "INTERCOM_STUCK_STEERS_AFTER=0", "PI_OFFLINE=1")
		w.InstallPi()
		boss := w.StartPeer("boss")
		dir := w.Project("stuck-child")
		m := NewAnthropic(t)
		const handoff = "Hand-off: agent-runs restarted this run"
		done := marker("FINISHED")
		m.Script(
			Turn{Hang: true},
			// The restarted Pi reads the note, and its bash tool awaits the
			// child's row showing tool:bash: Pi's own boundary report.
			Turn{Calls: []Call{PiBash(`cat "$INTERCOM_HANDOFF_FILE"; for i in $(seq 600); do intercom list --scope all | grep -q "tool:bash" && echo REPORTED-TOOL-BASH && break; sleep 0.2; done`)}},
			Turn{If: func(r *Request) bool {
				return strings.Contains(lastUserText(r), handoff) && strings.Contains(lastUserText(r), "REPORTED-TOOL-BASH")
			}, Text: done},
		)
		args := append([]string{"--supervisor", boss.ID, "--json", "start", "--agent", "worker", "--on-stuck", "nudge,interrupt,restart", "--"},
			line.argv("-p", "--model", w.piModel("child", m), "do the task")...)
		var started struct {
			RunID string `json:"run_id"`
		}
		if err := json.Unmarshal([]byte(w.runCmd(dir, args...)), &started); err != nil || started.RunID == "" {
			t.Fatalf("agent-runs start: %v", err)
		}
		id := started.RunID

		notice := boss.AwaitMessage("Subagent looks stuck.", turnTimeout)
		text, _ := notice["text"].(string)
		if !strings.Contains(text, "Run: "+id) || !strings.Contains(text, "Stuck: busy in thinking since ") ||
			!strings.Contains(text, "On stuck: nudge, then interrupt, then restart; each once for this stall") {
			t.Fatalf("stuck notice: %q", text)
		}
		if notice["from_person"] == true {
			t.Errorf("the run owner's stuck notice is marked as from a person: %v", notice)
		}
		finished := boss.AwaitMessage("Subagent run finished.", turnTimeout)
		if text, _ := finished["text"].(string); !strings.Contains(text, "State: completed") || !strings.Contains(text, done) {
			t.Fatalf("completion notice: %q\n%s", text, m.Dump())
		}
		if n := boss.Messages("Subagent"); n != 2 {
			t.Errorf("the supervisor got %d run notices, want the stuck one and the completion", n)
		}

		var st struct {
			Run *runs.Run `json:"run"`
		}
		if err := json.Unmarshal([]byte(w.runCmd(dir, "--json", "status", id)), &st); err != nil || st.Run == nil {
			t.Fatalf("agent-runs status --json: %v", err)
		}
		r := st.Run
		if r.State != runs.StateCompleted || r.Restarts != 1 || r.Stall != nil {
			t.Fatalf("run after the ladder: state %s, restarts %d, stall %+v, history %+v", r.State, r.Restarts, r.Stall, r.History)
		}
		var order []string
		for _, ev := range r.History {
			if ev.Stall != 1 {
				t.Fatalf("history event of another stall: %+v", r.History)
			}
			if ev.Kind != runs.EventReset {
				order = append(order, ev.Kind)
			}
			// The interrupt itself ended Pi: the restart needed no SIGTERM.
			if ev.Kind == runs.StepRestart && !strings.Contains(ev.Detail, "the child exited after the interrupt") {
				t.Errorf("restart: %q, want the interrupted child's own exit", ev.Detail)
			}
		}
		if strings.Join(order, ",") != "stuck,nudge,interrupt,restart" {
			t.Fatalf("history %+v", r.History)
		}

		// The interrupt reached Pi: it gave up its hung request. Nothing ran
		// twice: one hung request, the restarted Pi's two, one bash call.
		if n := m.Dropped(); n != 1 {
			t.Errorf("%d hung model requests were dropped, want 1", n)
		}
		if main := m.Main(); len(main) != 3 || m.Used() != 3 {
			t.Errorf("%d main requests, %d scripted turns used; want 3 and 3\n%s", len(main), m.Used(), m.Dump())
		}
		if r := m.Answered(2); r == nil || userCount(r, handoff) < 1 {
			t.Errorf("the restarted Pi's model never read the hand-off note\n%s", m.Dump())
		}
		note, err := os.ReadFile(filepath.Join(w.IntercomHome, "runs", id, "handoff-1.md"))
		if err != nil || !strings.Contains(string(note), "steps taken: nudge, interrupt, restart") {
			t.Errorf("hand-off note: %q, %v", note, err)
		}
	})
}
