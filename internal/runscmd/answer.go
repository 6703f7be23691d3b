package runscmd

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/intercom-dev/intercom/internal/kongrun"
	"github.com/intercom-dev/intercom/internal/runs"
	"github.com/intercom-dev/intercom/internal/schema"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// AnswerCmd answers a question.
type AnswerCmd struct {
	RunID      string   `arg:"" name:"run" help:"Run id."`
	QuestionID string   `name:"question-id" required:"" help:"Question id (see questions)." placeholder:"Q"`
	Message    []string `arg:"" help:"The answer."`
}

// Help shows examples.
func (AnswerCmd) Help() string {
	return `Saves the answer durably, then delivers it: a live waiting child consumes
it at once; if the child has exited, its saved launch is revived with a new
run id and the answer in INTERCOM_ANSWER_FILE. Repeating an identical answer
launches nothing; a different answer is refused and the first is kept.
Answering also clears the supervisor's matching pending ask.

Examples:
  agent-runs answer 78f659a3 --question-id q1a2b3c4d "Treat 403 as a re-auth trigger."
  agent-runs answer 78f659a3 --question-id q5e6f7a8b '{"responses":[{"id":"api","value":"Stable API"}]}'`
}

// Run answers.
func (a *AnswerCmd) Run(e *env) error {
	text := strings.Join(a.Message, " ")
	if strings.TrimSpace(text) == "" {
		return kongrun.Usagef("answer is empty")
	}
	r, err := e.load(a.RunID)
	if err != nil {
		return err
	}
	q, err := e.store.LoadQuestion(r.ID, a.QuestionID)
	if errors.Is(err, runs.ErrNotFound) {
		return kongrun.Exit(1, fmt.Sprintf("run %s has no question %q (see `agent-runs questions --id %s`)", r.ID, a.QuestionID, r.ID))
	}
	if err != nil {
		return err
	}
	rec := schema.AnswerReceipt{RunID: r.ID, QuestionID: q.ID, AnswerPath: e.store.AnswerPath(r.ID, q.ID)}
	_, created, err := e.store.SaveAnswer(r.ID, q.ID, text, "agent-runs answer")
	if errors.Is(err, runs.ErrConflict) {
		return kongrun.Exit(1, fmt.Sprintf("conflicting answer refused: %v", err))
	}
	if err != nil {
		return err
	}
	rec.Saved, rec.Identical = created, !created
	c, err := e.connect()
	if err != nil {
		rec.Note = "answer saved; broker unreachable, the child reads the saved answer when it next checks"
		return e.receipt(rec, err)
	}
	defer c.Close()
	// Whatever happens next, the supervisor's pending ask is resolved.
	childAlive := r.State == runs.StateRunning && runs.Alive(r.ChildPid)
	switch {
	case childAlive:
		if q.State == runs.QAnswered {
			rec.Note = "already answered and consumed; nothing delivered"
			return e.receipt(rec, nil)
		}
		err := deliver(e, c, r, q, text)
		rec.Delivered = err == nil
		rec.Note = "answer saved and delivered to the waiting child"
		if err != nil {
			rec.Note = "answer saved; delivery failed, the child reads the saved answer when it next checks"
		}
		return e.receipt(rec, err)
	case r.RevivedTo != "":
		rec.RevivedRun = r.RevivedTo
		rec.Note = "already answered; the child was revived as run " + r.RevivedTo + "; nothing launched"
		return e.receipt(rec, nil)
	case q.State == runs.QAnswered:
		// The child consumed this answer before it ended: there is nothing
		// to revive, and continuing would redo finished work.
		rec.Note = "already answered and consumed by the child; nothing launched"
		return e.receipt(rec, nil)
	case !created:
		rec.NeedsContinue = true
		rec.Note = fmt.Sprintf("answer was already saved but no revival was recorded; finish it with: agent-runs continue %s", r.ID)
		return e.receipt(rec, nil)
	}
	_ = c.CancelAsk(e.ctx, r.ChildSessionID, q.AskID)
	nr, err := e.revive(r, q)
	if err != nil {
		rec.NeedsContinue = true
		rec.Note = fmt.Sprintf("answer saved; revival failed: %v; retry with: agent-runs continue %s", err, r.ID)
		return e.receipt(rec, err)
	}
	rec.RevivedRun = nr.ID
	rec.Note = fmt.Sprintf("answer saved; the child had exited and was revived as run %s", nr.ID)
	return e.receipt(rec, nil)
}

func (e *env) receipt(rec schema.AnswerReceipt, err error) error {
	if e.g.JSON {
		if perr := e.printJSON(rec); perr != nil {
			return perr
		}
	} else {
		fmt.Fprintf(e.stdout, "Question %s of run %s: %s.\nAnswer: %s\n", rec.QuestionID, rec.RunID, rec.Note, rec.AnswerPath)
	}
	if err != nil {
		return kongrun.Exit(1, err.Error())
	}
	return nil
}

// deliver sends the answer as the supervisor's reply to the child's ask.
func deliver(e *env, c *intercom.Client, r *runs.Run, q *runs.Question, text string) error {
	_, err := c.Send(e.ctx, wire.SendRequest{From: r.Supervisor, To: r.ChildSessionID, Text: text, ReplyTo: q.AskID,
		Delivery: wire.DeliverySteer, ClientMsgID: "answer-" + r.ID + "-" + q.ID})
	return err
}

// revive relaunches an exited run's saved contract with the answer. The link
// is recorded on the old run before anything is launched, so an interrupted
// revival is finished by `continue`, never duplicated.
func (e *env) revive(old *runs.Run, q *runs.Question) (*runs.Run, error) {
	newID := runs.NewID()
	old, err := e.store.Update(old.ID, func(r *runs.Run) error {
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
	return e.launchRevival(old, newID, e.store.AnswerPath(old.ID, q.ID), q)
}

func (e *env) launchRevival(old *runs.Run, newID, answerPath string, q *runs.Question) (*runs.Run, error) {
	nr, err := e.store.Load(newID)
	if errors.Is(err, runs.ErrNotFound) {
		indexed := strings.HasSuffix(old.ChildSession, fmt.Sprintf("-%d", old.Index+1))
		nr = &runs.Run{
			ID: newID, Agent: old.Agent, Index: old.Index, Supervisor: old.Supervisor, SupervisorName: old.SupervisorName,
			ChildSession: runs.ChildName(old.Agent, newID, old.Index, indexed), ChildSessionID: "child-" + newID,
			Cmd: old.Cmd, Args: old.Args, Cwd: old.Cwd, Env: old.Env, EnvKeys: old.EnvKeys,
			State: runs.StateStarting, CreatedAt: time.Now().UTC(), AnswerFile: answerPath, RevivedFrom: old.ID,
		}
		if err := e.store.Create(nr); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	if nr.State != runs.StateStarting || runs.Alive(nr.OwnerPid) {
		return nr, nil // already launched
	}
	if _, err := e.launch(nr.ID); err != nil {
		return nil, err
	}
	if q != nil {
		_ = e.store.MarkConsumed(old.ID, q.ID)
	}
	return nr, nil
}

// ContinueCmd finishes an interrupted revival.
type ContinueCmd struct {
	RunID string `arg:"" name:"run" help:"The run whose answer should revive it."`
}

// Help shows examples.
func (ContinueCmd) Help() string {
	return "Launches the revival recorded for an exited run (or starts it from the saved answer) when an earlier answer was interrupted before launch.\n\nExamples:\n  agent-runs continue 78f659a3"
}

// Run continues.
func (cc *ContinueCmd) Run(e *env) error {
	r, err := e.load(cc.RunID)
	if err != nil {
		return err
	}
	if r.State == runs.StateRunning && runs.Alive(r.ChildPid) {
		return kongrun.Exit(1, fmt.Sprintf("run %s is still running; nothing to continue", r.ID))
	}
	qs, err := e.store.Questions(r.ID)
	if err != nil {
		return err
	}
	var answered *runs.Question
	for _, q := range qs {
		// Only an answer the child never consumed (answer_pending) starts a
		// revival; a recorded revival is finished with its own answer.
		if _, err := os.Stat(e.store.AnswerPath(r.ID, q.ID)); err == nil && q.State != runs.QCancelled &&
			(q.State == runs.QPending || r.RevivedTo != "") {
			answered = q
		}
	}
	if answered == nil {
		return kongrun.Exit(1, fmt.Sprintf("run %s has no saved, unconsumed answer to continue with", r.ID))
	}
	var nr *runs.Run
	if r.RevivedTo != "" {
		nr, err = e.launchRevival(r, r.RevivedTo, e.store.AnswerPath(r.ID, answered.ID), answered)
	} else {
		nr, err = e.revive(r, answered)
	}
	if err != nil {
		return err
	}
	if e.g.JSON {
		return e.printJSON(schema.Continued{RunID: r.ID, RevivedRun: nr.ID})
	}
	fmt.Fprintf(e.stdout, "Run %s continues as run %s.\n", r.ID, nr.ID)
	return nil
}
