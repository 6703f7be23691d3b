package runs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func newStoreWithQuestion(t *testing.T) (Files, *Question) {
	t.Helper()
	st := Files{Dir: filepath.Join(t.TempDir(), "runs")}
	if err := st.Create(&Run{ID: "r1", Agent: "w", State: StateRunning, CreatedAt: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	q := &Question{ID: NewQuestionID(), RunID: "r1", Agent: "w", Reason: ReasonDecision, Message: "Which API?"}
	if err := st.SaveQuestion(q); err != nil {
		t.Fatal(err)
	}
	return st, q
}

func TestSaveAnswerIdenticalAndConflict(t *testing.T) {
	t.Parallel()
	st, q := newStoreWithQuestion(t)
	if got, err := st.LoadQuestion("r1", q.ID); err != nil || got.State != QAwaiting || !got.Unresolved() {
		t.Fatalf("new question: %+v, %v", got, err)
	}
	a, created, err := st.SaveAnswer("r1", q.ID, "Use the stable API.", "agent-runs answer")
	if err != nil || !created || a.Message != "Use the stable API." || a.QuestionID != q.ID || a.RunID != "r1" {
		t.Fatalf("first answer: %+v, created %t, %v", a, created, err)
	}
	path := st.AnswerPath("r1", q.ID)
	first, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("answer.json mode %v, want 0600", fi.Mode().Perm())
	}
	if got, _ := st.LoadQuestion("r1", q.ID); got.State != QPending || !got.Unresolved() {
		t.Fatalf("after saving the answer the question is %q, want %q", got.State, QPending)
	}

	again, created, err := st.SaveAnswer("r1", q.ID, "Use the stable API.", "intercom reply")
	if err != nil || created || !again.SavedAt.Equal(a.SavedAt) || again.Source != "agent-runs answer" {
		t.Fatalf("identical answer: %+v, created %t, %v (want the first, kept)", again, created, err)
	}
	old, created, err := st.SaveAnswer("r1", q.ID, "Use the experimental API.", "agent-runs answer")
	if !errors.Is(err, ErrConflict) || created || old == nil || old.Message != "Use the stable API." {
		t.Fatalf("conflicting answer: %+v, created %t, %v (want ErrConflict and the first)", old, created, err)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, first) {
		t.Fatalf("answer.json changed:\n%s\nwas\n%s", now, first)
	}

	if err := st.MarkConsumed("r1", q.ID); err != nil {
		t.Fatal(err)
	}
	got, _ := st.LoadQuestion("r1", q.ID)
	if got.State != QAnswered || got.Unresolved() || got.ConsumedAt.IsZero() {
		t.Fatalf("consumed question: %+v", got)
	}
	// No temp files are left next to the durable ones.
	ents, _ := os.ReadDir(st.QuestionDir("r1", q.ID))
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "answer.json,question.json" {
		t.Fatalf("question dir holds %v", names)
	}
}

func TestSaveAnswerRefusedWhenCancelled(t *testing.T) {
	t.Parallel()
	st, q := newStoreWithQuestion(t)
	if _, err := st.UpdateQuestion("r1", q.ID, func(q *Question) error {
		q.State, q.CancelledAt = QCancelled, time.Now()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.SaveAnswer("r1", q.ID, "late", "test"); err == nil || !strings.Contains(err.Error(), "cancelled") {
		t.Fatalf("answer to a cancelled question: %v", err)
	}
	if _, err := os.Stat(st.AnswerPath("r1", q.ID)); !os.IsNotExist(err) {
		t.Fatalf("answer.json exists after a refused answer: %v", err)
	}
	// MarkConsumed does not resurrect a cancelled question.
	if err := st.MarkConsumed("r1", q.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.LoadQuestion("r1", q.ID); got.State != QCancelled || got.Unresolved() {
		t.Fatalf("cancelled question became %q", got.State)
	}
}

// Many writers race to answer: exactly one wins, everyone else sees either
// the identical answer or a conflict naming the winner, and the file holds
// the winner.
func TestSaveAnswerConcurrentFirstWins(t *testing.T) {
	t.Parallel()
	st, q := newStoreWithQuestion(t)
	const n = 24
	var wg sync.WaitGroup
	var mu sync.Mutex
	winners, conflicts := []string{}, 0
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := fmt.Sprintf("answer %d", i%6) // some writers agree
			a, created, err := st.SaveAnswer("r1", q.ID, msg, "test")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && created:
				winners = append(winners, msg)
			case errors.Is(err, ErrConflict):
				conflicts++
			case err != nil:
				t.Errorf("SaveAnswer: %v", err)
			case a.Message != msg:
				t.Errorf("identical result %q for %q", a.Message, msg)
			}
		}()
	}
	wg.Wait()
	if len(winners) != 1 {
		t.Fatalf("%d writers created the answer (%v), want exactly 1", len(winners), winners)
	}
	if conflicts == 0 {
		t.Fatal("no writer saw a conflict")
	}
	a, err := st.LoadAnswer("r1", q.ID)
	if err != nil || a.Message != winners[0] {
		t.Fatalf("saved answer %+v, %v; winner %q", a, err, winners[0])
	}
}

func TestSortQuestions(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }
	qs := []*Question{
		{ID: "answered-old", State: QAnswered, CreatedAt: at(0)},
		{ID: "cancelled-mid", State: QCancelled, CreatedAt: at(5)},
		{ID: "await-new", State: QAwaiting, CreatedAt: at(9)},
		{ID: "pending-old", State: QPending, CreatedAt: at(1)},
		{ID: "answered-new", State: QAnswered, CreatedAt: at(8)},
		{ID: "await-tie-b", State: QAwaiting, CreatedAt: at(3)},
		{ID: "await-tie-a", State: QAwaiting, CreatedAt: at(3)},
		{ID: "cancelled-old", State: QCancelled, CreatedAt: at(2)},
	}
	SortQuestions(qs)
	var got []string
	for _, q := range qs {
		got = append(got, q.ID)
	}
	want := []string{"pending-old", "await-tie-a", "await-tie-b", "await-new", "answered-old", "cancelled-old", "cancelled-mid", "answered-new"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("sorted %v\nwant   %v", got, want)
	}
}

func TestQuestionsOfRun(t *testing.T) {
	t.Parallel()
	st, q := newStoreWithQuestion(t)
	q2 := &Question{ID: "q2", RunID: "r1", Message: "second"}
	if err := st.SaveQuestion(q2); err != nil {
		t.Fatal(err)
	}
	if q2.State != QAwaiting || q2.CreatedAt.IsZero() {
		t.Fatalf("SaveQuestion set %+v", q2)
	}
	qs, err := st.Questions("r1")
	if err != nil || len(qs) != 2 {
		t.Fatalf("Questions: %v, %v", qs, err)
	}
	if qs, err := st.Questions("nosuch"); err != nil || len(qs) != 0 {
		t.Fatalf("Questions of a missing run: %v, %v", qs, err)
	}
	_ = q
}

func TestFormatSupervisorMessage(t *testing.T) {
	t.Parallel()
	got := FormatSupervisorMessage(ReasonDecision, "78f659a3", "worker", 0, "subagent-worker-78f659a3-1", "Which API?", "q1")
	lines := strings.Split(got, "\n")
	want := []string{"Subagent needs a supervisor decision.", "Run: 78f659a3", "Agent: worker", "Child index: 0", "Child intercom target: subagent-worker-78f659a3-1"}
	if !reflect.DeepEqual(lines[:5], want) {
		t.Fatalf("head %q, want %q", lines[:5], want)
	}
	if !strings.HasPrefix(lines[5], "Question: q1 ") || !strings.Contains(lines[5], "agent-runs answer 78f659a3 --question-id q1") {
		t.Fatalf("question line %q", lines[5])
	}
	if !strings.HasSuffix(got, "\n\nWhich API?") {
		t.Fatalf("body not after a blank line: %q", got)
	}
	p := FormatSupervisorMessage(ReasonProgress, "r", "a", 2, "", "found it", "")
	if p != "Subagent progress update.\nRun: r\nAgent: a\nChild index: 2\n\nfound it" {
		t.Fatalf("progress message %q", p)
	}
	if !strings.HasPrefix(FormatSupervisorMessage(ReasonInterview, "r", "a", 0, "", "b", "q"), "Subagent requests a structured supervisor interview.\n") {
		t.Fatal("interview heading")
	}
}
