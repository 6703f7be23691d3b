package runscmd

import (
	"testing"

	"github.com/intercom-dev/intercom/internal/runs"
)

func intp(n int) *int { return &n }

func TestOutcomeAndExitLine(t *testing.T) {
	for _, tc := range []struct {
		run           runs.Run
		outcome, exit string
	}{
		{runs.Run{ID: "78f659a3", Agent: "worker", State: runs.StateCompleted, ExitCode: intp(0), OutputPath: "/o"},
			"run 78f659a3 (worker) completed, exit code 0; output: /o", "Exit code: 0"},
		{runs.Run{ID: "78f659a3", Agent: "worker", State: runs.StateFailed, ExitCode: intp(3), OutputPath: "/o"},
			"run 78f659a3 (worker) failed, exit code 3; output: /o", "Exit code: 3"},
		{runs.Run{ID: "78f659a3", Agent: "worker", State: runs.StateStopped, OutputPath: "/o", RevivedTo: "9a0b1c2d"},
			"run 78f659a3 (worker) stopped, exit code none; output: /o; revived as 9a0b1c2d", "Exit code: none"},
	} {
		r := tc.run
		if got := outcome(&r); got != tc.outcome {
			t.Errorf("outcome = %q, want %q", got, tc.outcome)
		}
		if got := exitLine(&r); got != tc.exit {
			t.Errorf("exitLine = %q, want %q", got, tc.exit)
		}
	}
}

func TestSummariesPreviewAnswerPathAndCommand(t *testing.T) {
	st := runs.Files{Dir: t.TempDir()}
	decision := &runs.Question{ID: "q00000001", RunID: "78f659a3", Agent: "worker", Reason: runs.ReasonDecision, Message: "Which database?"}
	interview := &runs.Question{ID: "q00000002", RunID: "78f659a3", Agent: "worker", Reason: runs.ReasonInterview, Message: "Setup",
		Interview: &runs.Interview{Title: "Choices", Questions: []runs.InterviewQuestion{{ID: "db", Question: "Which database?"}, {ID: "os", Question: "Which OS?"}}}}
	for _, q := range []*runs.Question{decision, interview} {
		if err := st.SaveQuestion(q); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := st.SaveAnswer("78f659a3", "q00000001", "Postgres", "test"); err != nil {
		t.Fatal(err)
	}
	if err := st.MarkConsumed("78f659a3", "q00000001"); err != nil { // answered and read: resolved
		t.Fatal(err)
	}
	answered, err := st.LoadQuestion("78f659a3", "q00000001")
	if err != nil {
		t.Fatal(err)
	}
	got := summaries(st, []*runs.Question{answered, interview})
	if len(got) != 2 {
		t.Fatalf("%d summaries, want 2", len(got))
	}
	if got[0].Preview != "Which database?" || got[0].AnswerPath != st.AnswerPath("78f659a3", "q00000001") || got[0].AnswerCmd != "" {
		t.Errorf("answered question's summary %+v: want its answer path and no answer command", got[0])
	}
	if want := "Setup\nChoices\n[db] Which database?\n[os] Which OS?"; got[1].Preview != want {
		t.Errorf("interview preview %q, want %q", got[1].Preview, want)
	}
	if got[1].AnswerPath != "" || got[1].AnswerCmd != `agent-runs answer 78f659a3 --question-id q00000002 "..."` {
		t.Errorf("open question's summary %+v: want no answer path and the answer command", got[1])
	}
	if got[1].QuestionPath != st.QuestionPath("78f659a3", "q00000002") {
		t.Errorf("question path %q", got[1].QuestionPath)
	}
}
