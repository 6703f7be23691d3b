package runscmd

import (
	"fmt"
	"os"
	"strings"

	"github.com/intercom-dev/intercom/internal/kongrun"
	"github.com/intercom-dev/intercom/internal/runs"
	"github.com/intercom-dev/intercom/internal/schema"
)

// previewLimit is where question previews are cut.
const previewLimit = 2048

// QuestionsCmd pages durable questions.
type QuestionsCmd struct {
	Limit      int    `default:"20" help:"Page size, 1-100."`
	Offset     int    `default:"0" help:"Skip this many (use next_offset from the previous page)."`
	ID         string `name:"id" help:"Only this run." placeholder:"RUN"`
	Index      *int   `help:"Only children with this index." placeholder:"I"`
	QuestionID string `name:"question-id" help:"Only this question." placeholder:"Q"`
	All        bool   `help:"Every supervisor's questions."`
}

// Help shows examples.
func (QuestionsCmd) Help() string {
	return `Lists questions unresolved first (awaiting_input, answer_pending), then
answered and cancelled, oldest first. Previews stop at 2,048 characters: read
question_path for the full question and answer_path for the exact saved
answer. Browsing changes nothing.

Examples:
  agent-runs questions
  agent-runs questions --limit 10 --offset 10 --json
  agent-runs questions --id 78f659a3 --question-id q1a2b3c4d`
}

func summaries(st runs.Files, qs []*runs.Question) []schema.QuestionSummary {
	out := make([]schema.QuestionSummary, 0, len(qs))
	for _, q := range qs {
		text := q.Message
		if q.Interview != nil {
			var titles []string
			for _, iq := range q.Interview.Questions {
				titles = append(titles, fmt.Sprintf("[%s] %s", iq.ID, iq.Question))
			}
			text = strings.TrimSpace(text + "\n" + q.Interview.Title + "\n" + strings.Join(titles, "\n"))
		}
		s := schema.QuestionSummary{ID: q.ID, RunID: q.RunID, Agent: q.Agent, Index: q.Index, Reason: q.Reason, State: q.State,
			Preview: runs.Preview(text, previewLimit), AskID: q.AskID, ChildSession: q.ChildSession,
			QuestionPath: st.QuestionPath(q.RunID, q.ID), CreatedAt: q.CreatedAt}
		if _, err := os.Stat(st.AnswerPath(q.RunID, q.ID)); err == nil {
			s.AnswerPath = st.AnswerPath(q.RunID, q.ID)
		}
		if q.Unresolved() {
			s.AnswerCmd = fmt.Sprintf("agent-runs answer %s --question-id %s \"...\"", q.RunID, q.ID)
		}
		out = append(out, s)
	}
	return out
}

// Run pages.
func (q *QuestionsCmd) Run(e *env) error {
	if q.Limit < 1 || q.Limit > 100 {
		return kongrun.Usagef("--limit must be between 1 and 100, got %d", q.Limit)
	}
	if q.Offset < 0 {
		return kongrun.Usagef("--offset must be >= 0")
	}
	sup, err := e.filterSupervisor(q.All)
	if err != nil {
		return err
	}
	all, err := e.files.List()
	if err != nil {
		return err
	}
	var qs []*runs.Question
	for _, r := range all {
		if (sup != "" && r.Supervisor != sup) || (q.ID != "" && r.ID != q.ID) || (q.Index != nil && r.Index != *q.Index) {
			continue
		}
		rq, err := e.files.Questions(r.ID)
		if err != nil {
			return err
		}
		for _, x := range rq {
			if q.QuestionID == "" || x.ID == q.QuestionID {
				qs = append(qs, x)
			}
		}
	}
	runs.SortQuestions(qs)
	total := len(qs)
	start := min(q.Offset, total)
	end := min(start+q.Limit, total)
	page := summaries(e.files, qs[start:end])
	var next *int
	if end < total {
		next = &end
	}
	if e.g.JSON {
		return e.printJSON(schema.Questions{Questions: page, Total: total, Offset: start, NextOffset: next})
	}
	if total == 0 {
		fmt.Fprintln(e.stdout, "No questions.")
		return nil
	}
	for _, s := range page {
		fmt.Fprintf(e.stdout, "• %s run %s (%s #%d) [%s] %s\n  %s\n  question: %s\n", s.ID, s.RunID, s.Agent, s.Index, s.State, s.Reason,
			strings.ReplaceAll(runs.Preview(s.Preview, 300), "\n", "\n  "), s.QuestionPath)
		if s.AnswerPath != "" {
			fmt.Fprintf(e.stdout, "  answer: %s\n", s.AnswerPath)
		}
		if s.AnswerCmd != "" {
			fmt.Fprintf(e.stdout, "  answer with: %s\n", s.AnswerCmd)
		}
	}
	fmt.Fprintf(e.stdout, "(%d-%d of %d", start+1, end, total)
	if next != nil {
		fmt.Fprintf(e.stdout, "; next page: --offset %d", *next)
	}
	fmt.Fprintln(e.stdout, ")")
	return nil
}
