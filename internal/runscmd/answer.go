package runscmd

import (
	"fmt"
	"strings"

	"github.com/intercom-dev/intercom/internal/kongrun"
	"github.com/intercom-dev/intercom/internal/runs"
	"github.com/intercom-dev/intercom/internal/schema"
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
	rec, err := e.desk().Answer(e.ctx, a.RunID, a.QuestionID, text)
	if rec == nil {
		return err
	}
	if e.g.JSON {
		if perr := e.printJSON(rec); perr != nil {
			return perr
		}
	} else {
		fmt.Fprintf(e.stdout, "Question %s of run %s: %s.\nAnswer: %s\n", rec.QuestionID, rec.RunID, rec.Note, rec.AnswerPath)
	}
	if err != nil {
		return kongrun.Exit(1, err.Error()) // the receipt says what was saved
	}
	return nil
}

// desk is the answering and reviving of runs (runs.Desk).
func (e *env) desk() runs.Desk {
	return runs.Desk{Files: e.files, Launch: e.launch, Connect: e.connect}
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
	nr, err := e.desk().Continue(cc.RunID)
	if err != nil {
		return err
	}
	if e.g.JSON {
		return e.printJSON(schema.Continued{RunID: cc.RunID, RevivedRun: nr.ID})
	}
	fmt.Fprintf(e.stdout, "Run %s continues as run %s.\n", cc.RunID, nr.ID)
	return nil
}
