package runscmd

import (
	"fmt"
	"strings"
	"time"

	"github.com/intercom-dev/intercom/internal/runs"
	"github.com/intercom-dev/intercom/internal/schema"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// StopCmd stops a run.
type StopCmd struct {
	RunID string        `arg:"" name:"run" help:"Run id."`
	Grace time.Duration `default:"5s" zero:"SIGKILL at once" help:"Time between SIGTERM and SIGKILL (0: SIGKILL at once)." placeholder:"DUR"`
}

// Help shows examples.
func (StopCmd) Help() string {
	return "Cancels the run's open questions (state cancelled), then sends the child's process group SIGTERM and, after --grace, SIGKILL.\n\nExamples:\n  agent-runs stop 78f659a3\n  agent-runs stop 78f659a3 --grace 1s --json"
}

// Run stops.
func (s *StopCmd) Run(e *env) error {
	r, err := e.files.Lookup(s.RunID)
	if err != nil {
		return err
	}
	if r, err = e.files.Update(r.ID, func(r *runs.Run) error {
		if !r.Finished() {
			r.StopRequested = true
		}
		return nil
	}); err != nil {
		return err
	}
	qs, err := e.files.Questions(r.ID)
	if err != nil {
		return err
	}
	cancelled := 0
	c, cerr := e.connect()
	for _, q := range qs {
		if !q.Unresolved() {
			continue
		}
		if _, err := e.files.UpdateQuestion(r.ID, q.ID, func(q *runs.Question) error {
			q.State, q.CancelledAt = runs.QCancelled, time.Now().UTC()
			return nil
		}); err != nil {
			return err
		}
		cancelled++
		if cerr == nil && q.AskID != "" {
			_ = c.CancelAsk(e.ctx, q.ChildSession, q.AskID)
		}
	}
	if cerr == nil {
		c.Close()
	}
	if !r.Finished() && runs.Alive(r.ChildPid) {
		_ = runs.Terminate(r.ChildPid, s.Grace, func() bool {
			cur, err := e.files.Load(r.ID)
			return err == nil && cur.Finished()
		})
	}
	// The owner records the exit; if it is gone, record it here.
	deadline := time.Now().Add(5 * time.Second)
	for {
		cur, err := e.files.Load(r.ID)
		if err != nil {
			return err
		}
		if cur.Finished() || cur.State == runs.StateStarting && !runs.Alive(cur.OwnerPid) || time.Now().After(deadline) || !runs.Alive(cur.OwnerPid) {
			if !cur.Finished() {
				cur, err = e.files.Update(r.ID, func(r *runs.Run) error {
					if !r.Finished() {
						r.State, r.EndedAt = runs.StateStopped, time.Now().UTC()
					}
					return nil
				})
				if err != nil {
					return err
				}
			}
			r = cur
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if e.g.JSON {
		r.Env = nil
		return e.printJSON(schema.Stopped{Run: r, CancelledQuestions: cancelled})
	}
	fmt.Fprintf(e.stdout, "Stopped: %s; %d question(s) cancelled.\n", outcome(r), cancelled)
	return nil
}

// NudgeCmd steers a live child.
type NudgeCmd struct {
	RunID   string   `arg:"" name:"run" help:"Run id."`
	Message []string `arg:"" optional:"" help:"Nudge text (default: ask what it is blocked on)."`
}

// Help shows examples.
func (NudgeCmd) Help() string {
	return "Sends a steer message to a running child's session (it reaches the child at its next tool boundary). On a finished run it prints the outcome and restarts nothing. A nudge does not answer a question.\n\nExamples:\n  agent-runs nudge 78f659a3\n  agent-runs nudge 78f659a3 \"Skip the flaky test and continue.\""
}

// Run nudges.
func (n *NudgeCmd) Run(e *env) error {
	r, err := e.files.Lookup(n.RunID)
	if err != nil {
		return err
	}
	if r.Finished() || !runs.Alive(r.ChildPid) {
		if e.g.JSON {
			r.Env = nil
			return e.printJSON(schema.Nudged{Nudged: false, ChildSession: r.ChildSession, Run: r, Outcome: outcome(r)})
		}
		fmt.Fprintf(e.stdout, "Not nudged, nothing restarted: %s\n", outcome(r))
		return nil
	}
	text := strings.Join(n.Message, " ")
	if strings.TrimSpace(text) == "" {
		text = runs.DefaultNudge
	}
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	res, err := c.Send(e.ctx, wire.SendRequest{From: r.Supervisor, To: r.ChildSessionID, Text: text, Delivery: wire.DeliverySteer})
	if err != nil {
		return fmt.Errorf("nudge %s: %w", r.ID, err)
	}
	if e.g.JSON {
		return e.printJSON(schema.Nudged{Nudged: true, MessageID: res.ID, ChildSession: r.ChildSession})
	}
	fmt.Fprintf(e.stdout, "Nudged %s (message %s).\n", r.ChildSession, res.ID)
	return nil
}
