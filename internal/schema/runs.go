package schema

import (
	"time"

	"github.com/intercom-dev/intercom/internal/runs"
)

// RunRow is a run as agent-runs list and status print it (without the
// environment values, which stay in run.json).
type RunRow struct {
	*runs.Run
	OpenQuestions int  `json:"open_questions"`
	OwnerAlive    bool `json:"owner_alive"`
}

// RunList is agent-runs list --json.
type RunList struct {
	Runs []RunRow `json:"runs"`
}

// QuestionSummary is one question as agent-runs questions and status show it.
type QuestionSummary struct {
	ID           string    `json:"id"`
	RunID        string    `json:"run_id"`
	Agent        string    `json:"agent"`
	Index        int       `json:"index"`
	Reason       string    `json:"reason"`
	State        string    `json:"state"`
	Preview      string    `json:"preview"`
	AskID        string    `json:"ask_id,omitempty"`
	ChildSession string    `json:"child_session"`
	QuestionPath string    `json:"question_path"`
	AnswerPath   string    `json:"answer_path,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	AnswerCmd    string    `json:"answer_command,omitempty"`
}

// RunStatus is agent-runs status --json.
type RunStatus struct {
	Run       RunRow            `json:"run"`
	Questions []QuestionSummary `json:"questions"`
}

// Questions is agent-runs questions --json.
type Questions struct {
	Questions  []QuestionSummary `json:"questions"`
	Total      int               `json:"total"`
	Offset     int               `json:"offset"`
	NextOffset *int              `json:"next_offset"` // null on the last page
}

// RunStarted is agent-runs start --json without --wait.
type RunStarted struct {
	RunID        string `json:"run_id"`
	State        string `json:"state"`
	ChildSession string `json:"child_session"`
	OutputPath   string `json:"output_path"`
	RunDir       string `json:"run_dir"`
}

// RunResult is agent-runs start --wait --json.
type RunResult struct {
	Run    *runs.Run `json:"run"`
	Result string    `json:"result"` // the output's tail
}

// AnswerReceipt is agent-runs answer --json: what answering did.
type AnswerReceipt = runs.Receipt

// Continued is agent-runs continue --json.
type Continued struct {
	RunID      string `json:"run_id"`
	RevivedRun string `json:"revived_run"`
}

// Stopped is agent-runs stop --json.
type Stopped struct {
	Run                *runs.Run `json:"run"`
	CancelledQuestions int       `json:"cancelled_questions"`
}

// Nudged is agent-runs nudge --json: Nudged with MessageID and
// ChildSession for a live child; otherwise the finished Run and its Outcome.
type Nudged struct {
	Nudged       bool      `json:"nudged"`
	MessageID    string    `json:"message_id,omitempty"`
	ChildSession string    `json:"child_session"`
	Run          *runs.Run `json:"run,omitempty"`
	Outcome      string    `json:"outcome,omitempty"`
}
