package runs

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// The --on-stuck ladder of a run. The broker says when the child's session
// is stuck (wire.Session.StuckSince: the rule lives in the broker's
// stuck.go); the run owner watches that row, tells the supervisor once per
// stall, and climbs the ladder given to `agent-runs start --on-stuck`: the
// first step as the stall is seen, each next one StepAfter later while the
// same stall lasts. No step is taken twice for one stall, and the ladder
// starts again from the bottom once the child shows a boundary (the stall
// ends, or a new one with another start begins).

// Steps of the ladder, in the order they are climbed.
const (
	StepNudge     = "nudge"     // a steer to the child saying it looks stuck
	StepInterrupt = "interrupt" // SIGINT to the child's process group
	StepRestart   = "restart"   // the saved launch again, with a hand-off note
)

// LadderSteps are the steps in climbing order.
var LadderSteps = []string{StepNudge, StepInterrupt, StepRestart}

// History kinds besides the steps.
const (
	EventStuck = "stuck" // a stall was seen; the supervisor was told
	EventReset = "reset" // the child showed a boundary: the stall is over
)

// ParseOnStuck reads --on-stuck: steps of LadderSteps, comma-separated, in
// climbing order, each once ("" for none).
func ParseOnStuck(spec string) ([]string, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, nil
	}
	var out []string
	last := -1
	for _, part := range strings.Split(spec, ",") {
		step := strings.TrimSpace(part)
		i := slices.Index(LadderSteps, step)
		switch {
		case i < 0:
			return nil, fmt.Errorf("unknown --on-stuck step %q: want some of %s, in that order", step, strings.Join(LadderSteps, ","))
		case i <= last:
			return nil, fmt.Errorf("--on-stuck %q: each step once, in the order %s", spec, strings.Join(LadderSteps, ","))
		}
		last = i
		out = append(out, step)
	}
	return out, nil
}

// Stall is a run's current stall (run.json "stall").
type Stall struct {
	Number int       `json:"number"` // 1 for the run's first stall
	Since  time.Time `json:"since"`  // when it began (the broker's stuck_since)
	Reason string    `json:"reason"` // wire.StuckBusy or wire.StuckSteers
	Status string    `json:"status"` // the status the child was stuck in
	Steps  []string  `json:"steps,omitempty"`
	LastAt time.Time `json:"last_at"` // when it was seen or its last step taken
}

// Describe is the stall in a line: "busy in tool:bash since 04:01:02".
func (s Stall) Describe() string {
	what := "busy in " + s.Status
	if s.Reason == wire.StuckSteers {
		what = "leaving steers unread (" + s.Status + ")"
	}
	return fmt.Sprintf("%s since %s", what, s.Since.UTC().Format(time.RFC3339))
}

// Event is one line of a run's history (run.json "history").
type Event struct {
	At     time.Time `json:"at"`
	Kind   string    `json:"kind"` // EventStuck, a step, EventReset
	Stall  int       `json:"stall"`
	Detail string    `json:"detail,omitempty"`
}

// Ladder decides, from the child's list rows, what the owner does. It is
// not safe for concurrent use.
type Ladder struct {
	Steps     []string      // ParseOnStuck
	StepAfter time.Duration // between two steps of one stall
	stall     *Stall
	stalls    int
}

// Action is what Observe asks for: Kind is EventStuck (tell the
// supervisor), a step, or EventReset; Stall is the stall as it is after it.
type Action struct {
	Kind  string
	Stall Stall
}

// Observe takes the child's row as of now and returns what to do, in
// order.
func (l *Ladder) Observe(row wire.Session, now time.Time) []Action {
	var out []Action
	if l.stall != nil && (row.StuckSince.IsZero() || !row.StuckSince.Equal(l.stall.Since)) {
		out = append(out, Action{Kind: EventReset, Stall: *l.stall})
		l.stall = nil
	}
	if row.StuckSince.IsZero() {
		return out
	}
	if l.stall == nil {
		l.stalls++
		l.stall = &Stall{Number: l.stalls, Since: row.StuckSince, Reason: row.StuckReason, Status: row.Status, LastAt: now}
		out = append(out, Action{Kind: EventStuck, Stall: *l.stall})
	} else if now.Sub(l.stall.LastAt) < l.StepAfter {
		return out
	}
	if n := len(l.stall.Steps); n < len(l.Steps) {
		l.stall.Steps = append(slices.Clip(l.stall.Steps), l.Steps[n])
		l.stall.LastAt = now
		out = append(out, Action{Kind: l.Steps[n], Stall: *l.stall})
	}
	return out
}

// Exited is what to do when the child exits unsuccessfully during a stall
// whose last step was the interrupt: a harness that ends on SIGINT (pi -p,
// claude -p) did not finish its task, so when restart is the ladder's next
// step it is taken now, once, rather than ending the run; ok is false
// otherwise (the exit ends the run).
func (l *Ladder) Exited(now time.Time) (Action, bool) {
	if l.stall == nil {
		return Action{}, false
	}
	n := len(l.stall.Steps)
	if n == 0 || l.stall.Steps[n-1] != StepInterrupt || n >= len(l.Steps) || l.Steps[n] != StepRestart {
		return Action{}, false
	}
	l.stall.Steps = append(slices.Clip(l.stall.Steps), StepRestart)
	l.stall.LastAt = now
	return Action{Kind: StepRestart, Stall: *l.stall}, true
}

// StuckNotice is the supervisor's one notice of a stall.
func StuckNotice(r *Run, s Stall) string {
	ladder := "none (agent-runs nudge " + r.ID + ", agent-runs stop " + r.ID + ")"
	if len(r.OnStuck) > 0 {
		ladder = strings.Join(r.OnStuck, ", then ") + "; each once for this stall"
	}
	return fmt.Sprintf("Subagent looks stuck.\nRun: %s\nAgent: %s\nChild index: %d\nChild intercom target: %s\nStuck: %s\nOn stuck: %s\nStatus: agent-runs status %s",
		r.ID, r.Agent, r.Index, r.ChildSession, s.Describe(), ladder, r.ID)
}

// StuckNudge is the steer the ladder's nudge sends the child.
func StuckNudge(s Stall) string {
	return "You look stuck: " + s.Describe() + ". " + DefaultNudge
}

// Handoff is the note a restarted child finds in INTERCOM_HANDOFF_FILE
// (and in its inbox): why it was restarted and where its predecessor's
// output is.
func Handoff(r *Run, s Stall) string {
	return fmt.Sprintf("Hand-off: agent-runs restarted this run (%s, agent %s) because the previous child looked stuck: %s; steps taken: %s.\nIts output so far: %s\nContinue the task from where it stopped; do not repeat finished work.\n\n--- previous output (tail) ---\n%s",
		r.ID, r.Agent, s.Describe(), strings.Join(s.Steps, ", "), r.OutputPath, Tail(r.OutputPath, 2000))
}
