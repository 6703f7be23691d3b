package runs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Receipt is what answering a question did (agent-runs answer --json).
type Receipt struct {
	RunID         string `json:"run_id"`
	QuestionID    string `json:"question_id"`
	Saved         bool   `json:"saved"`     // this call saved it
	Identical     bool   `json:"identical"` // it was already saved with the same text
	Delivered     bool   `json:"delivered"` // handed to the live child
	RevivedRun    string `json:"revived_run,omitempty"`
	NeedsContinue bool   `json:"needs_continue"`
	AnswerPath    string `json:"answer_path"`
	Note          string `json:"note"`
}

// Desk is the supervisor's side of runs: it answers their questions and
// revives exited children with the answer (agent-runs answer, continue).
type Desk struct {
	Files  Files
	Launch Launcher
	// Connect opens the broker connection that delivers an answer. It is
	// called once the answer is saved; without a broker the answer waits
	// in its file.
	Connect func() (*intercom.Client, error)
}

// Lookup is Load, with the error a person reads when there is no such run.
func (s Files) Lookup(id string) (*Run, error) {
	r, err := s.Load(id)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("no run %q (see `agent-runs list --all`)", id)
	}
	return r, err
}

// Answer saves text durably as the answer to question qid of run id, then
// delivers it: a live waiting child consumes it at once; an exited child's
// saved launch is revived with a new run id and the answer in
// INTERCOM_ANSWER_FILE. Repeating an identical answer launches nothing; a
// different one is refused and the first kept. The supervisor's pending ask
// is resolved either way.
//
// Without a receipt the answer was not saved (no such run or question, a
// conflicting answer, a store error). With a receipt and an error it was
// saved but not delivered or revived; the receipt's Note says what to do.
func (d Desk) Answer(ctx context.Context, id, qid, text string) (*Receipt, error) {
	r, err := d.Files.Lookup(id)
	if err != nil {
		return nil, err
	}
	q, err := d.Files.LoadQuestion(r.ID, qid)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("run %s has no question %q (see `agent-runs questions --id %s`)", r.ID, qid, r.ID)
	}
	if err != nil {
		return nil, err
	}
	rec := &Receipt{RunID: r.ID, QuestionID: q.ID, AnswerPath: d.Files.AnswerPath(r.ID, q.ID)}
	_, created, err := d.Files.SaveAnswer(r.ID, q.ID, text, "agent-runs answer")
	if errors.Is(err, ErrConflict) {
		return nil, fmt.Errorf("conflicting answer refused: %v", err)
	}
	if err != nil {
		return nil, err
	}
	rec.Saved, rec.Identical = created, !created
	c, err := d.Connect()
	if err != nil {
		rec.Note = "answer saved; broker unreachable, the child reads the saved answer when it next checks"
		return rec, err
	}
	defer c.Close()
	// The child may have read the saved answer, and ended, while this
	// connected (a minute, when the broker restarts): decide on the run and
	// the question as they are now, or an answer it consumed would revive it.
	if r, err = d.Files.Load(r.ID); err != nil {
		return rec, err
	}
	if q, err = d.Files.LoadQuestion(r.ID, q.ID); err != nil {
		return rec, err
	}
	// Whatever happens next, the supervisor's pending ask is resolved.
	childAlive := r.State == StateRunning && Alive(r.ChildPid)
	switch {
	case created && q.State == QAnswered:
		rec.Note = "answer saved and read by the waiting child"
		return rec, nil
	case childAlive:
		if q.State == QAnswered {
			rec.Note = "already answered and consumed; nothing delivered"
			return rec, nil
		}
		// The supervisor's reply to the child's ask.
		_, err := c.Send(ctx, wire.SendRequest{From: r.Supervisor, To: r.ChildSessionID, Text: text, ReplyTo: askOf(ctx, c, r, q),
			Delivery: wire.DeliverySteer, ClientMsgID: "answer-" + r.ID + "-" + q.ID})
		rec.Delivered = err == nil
		rec.Note = "answer saved and delivered to the waiting child"
		if err != nil {
			rec.Note = "answer saved; delivery failed, the child reads the saved answer when it next checks"
		}
		return rec, err
	case r.RevivedTo != "":
		rec.RevivedRun = r.RevivedTo
		rec.Note = "already answered; the child was revived as run " + r.RevivedTo + "; nothing launched"
		return rec, nil
	case q.State == QAnswered:
		// The child consumed this answer before it ended: there is nothing
		// to revive, and continuing would redo finished work.
		rec.Note = "already answered and consumed by the child; nothing launched"
		return rec, nil
	case !created:
		rec.NeedsContinue = true
		rec.Note = fmt.Sprintf("answer was already saved but no revival was recorded; finish it with: agent-runs continue %s", r.ID)
		return rec, nil
	}
	_ = c.CancelAsk(ctx, r.ChildSessionID, askOf(ctx, c, r, q))
	nr, err := d.revive(r, q)
	if err != nil {
		rec.NeedsContinue = true
		rec.Note = fmt.Sprintf("answer saved; revival failed: %v; retry with: agent-runs continue %s", err, r.ID)
		return rec, err
	}
	rec.RevivedRun = nr.ID
	rec.Note = fmt.Sprintf("answer saved; the child had exited and was revived as run %s", nr.ID)
	return rec, nil
}

// Continue finishes an interrupted revival of run id: it launches the
// revival recorded for it, or starts one from its saved answer. It returns
// the revived run.
func (d Desk) Continue(id string) (*Run, error) {
	r, err := d.Files.Lookup(id)
	if err != nil {
		return nil, err
	}
	if r.State == StateRunning && Alive(r.ChildPid) {
		return nil, fmt.Errorf("run %s is still running; nothing to continue", r.ID)
	}
	qs, err := d.Files.Questions(r.ID)
	if err != nil {
		return nil, err
	}
	var answered *Question
	for _, q := range qs {
		// Only an answer the child never consumed (answer_pending) starts a
		// revival; a recorded revival is finished with its own answer.
		if _, err := os.Stat(d.Files.AnswerPath(r.ID, q.ID)); err == nil && q.State != QCancelled &&
			(q.State == QPending || r.RevivedTo != "") {
			answered = q
		}
	}
	if answered == nil {
		return nil, fmt.Errorf("run %s has no saved, unconsumed answer to continue with", r.ID)
	}
	if r.RevivedTo != "" {
		return d.launchRevival(r, r.RevivedTo, answered)
	}
	return d.revive(r, answered)
}

// revive relaunches an exited run's saved contract with the answer to q.
// The link is recorded on the old run before anything is launched, so an
// interrupted revival is finished by Continue, never duplicated.
func (d Desk) revive(old *Run, q *Question) (*Run, error) {
	newID := NewID()
	old, err := d.Files.Update(old.ID, func(r *Run) error {
		if r.RevivedTo != "" {
			newID = r.RevivedTo
			return nil
		}
		r.RevivedTo = newID
		return nil
	})
	if err != nil {
		return nil, err
	}
	return d.launchRevival(old, newID, q)
}

// launchRevival creates run newID from old's launch with q's answer, unless
// it exists, and starts its owner unless it was started.
func (d Desk) launchRevival(old *Run, newID string, q *Question) (*Run, error) {
	nr, err := d.Files.Load(newID)
	if errors.Is(err, ErrNotFound) {
		indexed := strings.HasSuffix(old.ChildSession, fmt.Sprintf("-%d", old.Index+1))
		nr = &Run{
			ID: newID, Agent: old.Agent, Index: old.Index, Supervisor: old.Supervisor, SupervisorName: old.SupervisorName,
			ChildSession: ChildName(old.Agent, newID, old.Index, indexed), ChildSessionID: "child-" + newID,
			Cmd: old.Cmd, Args: old.Args, Cwd: old.Cwd, Env: old.Env, EnvKeys: old.EnvKeys,
			State: StateStarting, CreatedAt: time.Now().UTC(), AnswerFile: d.Files.AnswerPath(old.ID, q.ID), RevivedFrom: old.ID,
			OnStuck: old.OnStuck,
		}
		if err := d.Files.Create(nr); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	if nr.State != StateStarting || Alive(nr.OwnerPid) {
		return nr, nil // already launched
	}
	if _, err := d.Launch(nr.ID); err != nil {
		return nil, err
	}
	_ = d.Files.MarkConsumed(old.ID, q.ID)
	return nr, nil
}

// askOf is the id of the ask that put question q to the supervisor. The
// child records it once its send has returned, so the supervisor can hold
// the message, and answer it, before the question says which ask it was:
// then it is the supervisor's pending ask from the child that names q.
func askOf(ctx context.Context, c *intercom.Client, r *Run, q *Question) string {
	if q.AskID != "" {
		return q.AskID
	}
	asks, err := c.Pending(ctx, r.Supervisor)
	if err != nil {
		return ""
	}
	return pendingAskOf(asks, r.ChildSessionID, q.ID)
}

// pendingAskOf picks the ask from child that names question qid.
func pendingAskOf(asks []wire.PendingAsk, child, qid string) string {
	for _, a := range asks {
		if a.From.ID == child && strings.Contains(a.Text, questionLine(qid)) {
			return a.AskID
		}
	}
	return ""
}
