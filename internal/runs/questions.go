package runs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// Question states.
const (
	QAwaiting  = "awaiting_input"
	QPending   = "answer_pending" // answer saved, not yet consumed by the child
	QAnswered  = "answered"
	QCancelled = "cancelled"
)

// Question is questions/<qid>/question.json.
type Question struct {
	ID           string     `json:"id"`
	RunID        string     `json:"run_id"`
	Agent        string     `json:"agent"`
	Index        int        `json:"index"`
	Reason       string     `json:"reason"`
	Message      string     `json:"message"`
	Interview    *Interview `json:"interview,omitempty"`
	ChildSession string     `json:"child_session"`
	Supervisor   string     `json:"supervisor"`
	AskID        string     `json:"ask_id,omitempty"`
	State        string     `json:"state"`
	CreatedAt    time.Time  `json:"created_at"`
	ConsumedAt   time.Time  `json:"consumed_at,omitzero"`
	CancelledAt  time.Time  `json:"cancelled_at,omitzero"`
}

// Answer is questions/<qid>/answer.json; once written it never changes.
type Answer struct {
	QuestionID string    `json:"question_id"`
	RunID      string    `json:"run_id"`
	Message    string    `json:"message"`
	Source     string    `json:"source"` // agent-runs answer, or intercom reply
	SavedAt    time.Time `json:"saved_at"`
}

// QuestionDir is the directory of one question.
func (s Files) QuestionDir(run, qid string) string {
	return filepath.Join(s.RunDir(run), "questions", qid)
}

// QuestionPath and AnswerPath name the two files of a question.
func (s Files) QuestionPath(run, qid string) string {
	return filepath.Join(s.QuestionDir(run, qid), "question.json")
}
func (s Files) AnswerPath(run, qid string) string {
	return filepath.Join(s.QuestionDir(run, qid), "answer.json")
}

// NewQuestionID returns "q" + 8 hex digits.
func NewQuestionID() string { return "q" + NewID() }

// SaveQuestion persists a new question (state awaiting_input).
func (s Files) SaveQuestion(q *Question) error {
	if err := os.MkdirAll(s.QuestionDir(q.RunID, q.ID), 0o700); err != nil {
		return fmt.Errorf("save question: %w", err)
	}
	q.State = QAwaiting
	if q.CreatedAt.IsZero() {
		q.CreatedAt = time.Now().UTC()
	}
	return writeJSON(s.QuestionPath(q.RunID, q.ID), q)
}

// LoadQuestion reads a question; its State reflects the answer file.
func (s Files) LoadQuestion(run, qid string) (*Question, error) {
	if ValidID(run) != nil || ValidID(qid) != nil {
		return nil, fmt.Errorf("question %s/%s: %w", run, qid, ErrNotFound)
	}
	var q Question
	if err := readJSON(s.QuestionPath(run, qid), &q); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("question %s of run %s: %w", qid, run, ErrNotFound)
		}
		return nil, err
	}
	if q.State == QAwaiting {
		if _, err := os.Stat(s.AnswerPath(run, qid)); err == nil {
			q.State = QPending
		}
	}
	return &q, nil
}

// UpdateQuestion rewrites question.json under the run's lock.
func (s Files) UpdateQuestion(run, qid string, fn func(*Question) error) (*Question, error) {
	var out *Question
	err := withLock(s.lockFile(run), func() error {
		q, err := s.LoadQuestion(run, qid)
		if err != nil {
			return err
		}
		if err := fn(q); err != nil {
			return err
		}
		out = q
		return writeJSON(s.QuestionPath(run, qid), q)
	})
	return out, err
}

// LoadAnswer reads a saved answer (fs.ErrNotExist when none).
func (s Files) LoadAnswer(run, qid string) (*Answer, error) {
	var a Answer
	if err := readJSON(s.AnswerPath(run, qid), &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// SaveAnswer stores the first answer to a question. An identical repeat
// returns (existing, false, nil); a different one returns ErrConflict and
// keeps the first. A cancelled question refuses answers.
func (s Files) SaveAnswer(run, qid, message, source string) (*Answer, bool, error) {
	q, err := s.LoadQuestion(run, qid)
	if err != nil {
		return nil, false, err
	}
	if q.State == QCancelled {
		return nil, false, fmt.Errorf("question %s of run %s was cancelled", qid, run)
	}
	a := &Answer{QuestionID: qid, RunID: run, Message: message, Source: source, SavedAt: time.Now().UTC()}
	err = createJSON(s.AnswerPath(run, qid), a)
	if errors.Is(err, fs.ErrExist) {
		old, rerr := s.LoadAnswer(run, qid)
		if rerr != nil {
			return nil, false, rerr
		}
		if old.Message == message {
			return old, false, nil
		}
		return old, false, fmt.Errorf("%w for question %s of run %s (kept: %q)", ErrConflict, qid, run, preview(old.Message, 80))
	}
	if err != nil {
		return nil, false, err
	}
	return a, true, nil
}

// MarkConsumed records that the child received the answer.
func (s Files) MarkConsumed(run, qid string) error {
	_, err := s.UpdateQuestion(run, qid, func(q *Question) error {
		if q.State != QCancelled {
			q.State = QAnswered
			q.ConsumedAt = time.Now().UTC()
		}
		return nil
	})
	return err
}

// Questions returns the questions of a run.
func (s Files) Questions(run string) ([]*Question, error) {
	return loadEach(filepath.Join(s.RunDir(run), "questions"), func(qid string) (*Question, error) {
		return s.LoadQuestion(run, qid)
	})
}

// Unresolved reports whether a question still waits for an answer.
func (q *Question) Unresolved() bool { return q.State == QAwaiting || q.State == QPending }

// SortQuestions puts unresolved first, then oldest first.
func SortQuestions(qs []*Question) {
	sort.SliceStable(qs, func(i, j int) bool {
		if qs[i].Unresolved() != qs[j].Unresolved() {
			return qs[i].Unresolved()
		}
		if !qs[i].CreatedAt.Equal(qs[j].CreatedAt) {
			return qs[i].CreatedAt.Before(qs[j].CreatedAt)
		}
		return qs[i].ID < qs[j].ID
	})
}

func preview(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n < 1 {
		return ""
	}
	return string(r[:n-1]) + "…" // the ellipsis counts: at most n runes
}

// Preview cuts s to at most n runes, a cut marked by a trailing "…" (used
// for question previews).
func Preview(s string, n int) string { return preview(s, n) }
