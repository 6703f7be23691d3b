package runs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

func TestValidID(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"a", "0", "78f659a3", "q1a2b3c4d", "a_b-c", strings.Repeat("a", 64)} {
		if err := ValidID(id); err != nil {
			t.Errorf("ValidID(%q) = %v, want ok", id, err)
		}
	}
	for _, id := range []string{"", "A", "Run1", "-x", "_x", "a/b", "../x", "..", ".", "a b", "a.b", "é", "a\n", strings.Repeat("a", 65)} {
		if err := ValidID(id); err == nil {
			t.Errorf("ValidID(%q) = nil, want an error", id)
		}
	}
}

// Invalid ids never reach the file system: no path traversal through a run
// or question id, and a clear ErrNotFound.
func TestStoreRejectsInvalidIDs(t *testing.T) {
	t.Parallel()
	st := Store{Dir: filepath.Join(t.TempDir(), "runs")}
	r := &Run{ID: "abc", Agent: "w", State: StateRunning, CreatedAt: time.Now()}
	if err := st.Create(r); err != nil {
		t.Fatal(err)
	}
	if err := st.SaveQuestion(&Question{ID: "q1", RunID: "abc", Message: "m"}); err != nil {
		t.Fatal(err)
	}
	// A readable run.json outside the store that a traversal would find.
	if err := os.WriteFile(filepath.Join(filepath.Dir(st.Dir), "run.json"), []byte(`{"id":"evil"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"..", "../abc", "ABC", "", "abc/questions"} {
		if _, err := st.Load(id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Load(%q) = %v, want ErrNotFound", id, err)
		}
	}
	for _, p := range [][2]string{{"abc", ".."}, {"abc", "../q1"}, {"..", "q1"}, {"abc", "Q1"}, {"abc", "qmissing"}} {
		if _, err := st.LoadQuestion(p[0], p[1]); !errors.Is(err, ErrNotFound) {
			t.Errorf("LoadQuestion(%q, %q) = %v, want ErrNotFound", p[0], p[1], err)
		}
		if _, _, err := st.SaveAnswer(p[0], p[1], "x", "test"); !errors.Is(err, ErrNotFound) {
			t.Errorf("SaveAnswer(%q, %q) = %v, want ErrNotFound", p[0], p[1], err)
		}
	}
	if _, err := st.Load("nosuchrun"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load of a missing run = %v, want ErrNotFound", err)
	}
}

func TestChildName(t *testing.T) {
	t.Parallel()
	cases := []struct {
		agent, run string
		index      int
		indexed    bool
		want       string
	}{
		{"worker", "78f659a3", 0, false, "subagent-worker-78f659a3"},
		{"worker", "78f659a3", 0, true, "subagent-worker-78f659a3-1"},
		{"worker", "78f659a3", 2, true, "subagent-worker-78f659a3-3"},
		{"worker", "78f659a3", 2, false, "subagent-worker-78f659a3"},
		{"Code Reviewer!", "78f659a3", 0, false, "subagent-code-reviewer-78f659a3"},
		{"  --Mixed__Case--  ", "ab", 0, false, "subagent-mixed__case-ab"},
		{"", "ab", 0, false, "subagent-agent-ab"},
		{"!!!", "ab", 1, true, "subagent-agent-ab-2"},
		{"a.b/c", "ab", 0, false, "subagent-a-b-c-ab"},
	}
	for _, c := range cases {
		if got := ChildName(c.agent, c.run, c.index, c.indexed); got != c.want {
			t.Errorf("ChildName(%q, %q, %d, %t) = %q, want %q", c.agent, c.run, c.index, c.indexed, got, c.want)
		}
	}
	// Long names are cut to 64 characters and never end in '-'.
	name := ChildName(strings.Repeat("x", 54)+"-"+strings.Repeat("y", 20), "78f659a3", 0, false)
	if len(name) > 64 || strings.HasSuffix(name, "-") || !strings.HasPrefix(name, "subagent-xxx") {
		t.Errorf("long ChildName = %q (%d chars)", name, len(name))
	}
	valid := regexp.MustCompile(`^[a-z0-9_-]+$`)
	for _, agent := range []string{"Ünïcode agent", "tab\there", strings.Repeat("Z", 100)} {
		if n := ChildName(agent, "0a1b2c3d", 4, true); !valid.MatchString(n) || len(n) > 64 {
			t.Errorf("ChildName(%q) = %q: not a clean session name", agent, n)
		}
	}
}

func TestParseInterviewValid(t *testing.T) {
	t.Parallel()
	iv, err := ParseInterview([]byte(`{
		"title": "API migration choices",
		"description": "Before I continue",
		"questions": [
			{"id": "api", "type": "single", "question": "Which API?", "options": ["Stable API", {"label": "Experimental API", "description": "faster"}]},
			{"id": "tags", "type": "multi", "question": "Which tags?", "options": ["a", "b", "c"]},
			{"id": "constraints", "type": "text", "question": "Constraints?", "context": "public error shape"},
			{"id": "shot", "type": "image", "question": "Screenshot path?"},
			{"id": "note", "type": "info", "question": "FYI: tests are slow."}
		]}`))
	if err != nil {
		t.Fatal(err)
	}
	if iv.Title != "API migration choices" || len(iv.Questions) != 5 {
		t.Fatalf("parsed %+v", iv)
	}
	want := []InterviewOption{{Label: "Stable API"}, {Label: "Experimental API", Description: "faster"}}
	if !reflect.DeepEqual(iv.Questions[0].Options, want) {
		t.Fatalf("options %+v, want %+v", iv.Questions[0].Options, want)
	}
	if iv.Questions[2].Context != "public error shape" {
		t.Fatalf("context lost: %+v", iv.Questions[2])
	}
}

func TestParseInterviewRules(t *testing.T) {
	t.Parallel()
	q := func(body string) string { return `{"questions":[` + body + `]}` }
	cases := []struct{ name, doc, want string }{
		{"not JSON", `{"questions": [`, "not valid JSON"},
		{"not an object", `"hello"`, "not valid JSON"},
		{"trailing data", `{"questions":[{"id":"a","type":"text","question":"x"}]} {"more":1}`, "not valid JSON"},
		{"no questions", `{}`, "must not be empty"},
		{"empty questions", `{"questions":[]}`, "must not be empty"},
		{"empty id", q(`{"id":"","type":"text","question":"x"}`), "id must not be empty"},
		{"blank id", q(`{"id":"  ","type":"text","question":"x"}`), "id must not be empty"},
		{"missing id", q(`{"type":"text","question":"x"}`), "id must not be empty"},
		{"duplicate id", q(`{"id":"a","type":"text","question":"x"},{"id":"a","type":"text","question":"y"}`), `duplicate id "a"`},
		{"empty question", q(`{"id":"a","type":"text","question":" "}`), "question text must not be empty"},
		{"single without options", q(`{"id":"a","type":"single","question":"x"}`), "type single requires options"},
		{"single empty options", q(`{"id":"a","type":"single","question":"x","options":[]}`), "type single requires options"},
		{"multi without options", q(`{"id":"a","type":"multi","question":"x"}`), "type multi requires options"},
		{"empty option string", q(`{"id":"a","type":"single","question":"x","options":["ok",""]}`), "options must be non-empty"},
		{"option without label", q(`{"id":"a","type":"multi","question":"x","options":[{"description":"d"}]}`), "options must be non-empty"},
		{"option of wrong kind", q(`{"id":"a","type":"single","question":"x","options":[3]}`), "option must be a string or an object"},
		{"text with options", q(`{"id":"a","type":"text","question":"x","options":["o"]}`), "type text does not take options"},
		{"image with options", q(`{"id":"a","type":"image","question":"x","options":["o"]}`), "type image does not take options"},
		{"info with options", q(`{"id":"a","type":"info","question":"x","options":["o"]}`), "type info does not take options"},
		{"bad type", q(`{"id":"a","type":"choice","question":"x"}`), `invalid type "choice"`},
		{"missing type", q(`{"id":"a","question":"x"}`), `invalid type ""`},
		{"second question bad", q(`{"id":"a","type":"text","question":"x"},{"id":"b","type":"single","question":"y"}`), "interview question 2 (b)"},
	}
	for _, c := range cases {
		_, err := ParseInterview([]byte(c.doc))
		if err == nil {
			t.Errorf("%s: ParseInterview accepted %s", c.name, c.doc)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q does not mention %q", c.name, err, c.want)
		}
	}
}

func testInterview(t *testing.T) *Interview {
	t.Helper()
	iv, err := ParseInterview([]byte(`{"title":"T","questions":[
		{"id":"api","type":"single","question":"Which API?","options":["Stable API","Experimental API"]},
		{"id":"tags","type":"multi","question":"Tags?","options":["a","b","c"]},
		{"id":"constraints","type":"text","question":"Constraints?"},
		{"id":"shot","type":"image","question":"Screenshot?"},
		{"id":"note","type":"info","question":"FYI"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	return iv
}

func TestParseStructuredReplyAccepts(t *testing.T) {
	t.Parallel()
	iv := testInterview(t)
	plain := `{"responses":[{"id":"api","value":"Stable API"},{"id":"tags","value":["a","c"]},{"id":"constraints","value":"Keep the error shape."},{"id":"shot","value":"/tmp/s.png"}]}`
	want := &StructuredReply{Responses: []Response{
		{"api", "Stable API"}, {"tags", []string{"a", "c"}}, {"constraints", "Keep the error shape."}, {"shot", "/tmp/s.png"},
	}}
	for name, text := range map[string]string{
		"plain":             plain,
		"plain with spaces": "\n  " + plain + "\n ",
		"fenced json":       "```json\n" + plain + "\n```",
		"fenced no lang":    "```\n" + plain + "\n```",
		"fenced in prose":   "Here you go:\n\n```json\n" + plain + "\n```\nThanks!",
		"first fence wins":  "```json\n" + plain + "\n```\nand not this:\n```json\n{\"responses\":[{\"id\":\"api\",\"value\":\"nope\"}]}\n```",
	} {
		got, err := ParseStructuredReply(text, iv)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, want %+v", name, got, want)
		}
	}
	// A partial answer (not every question) is still a structured reply.
	got, err := ParseStructuredReply(`{"responses":[{"id":"api","value":"Experimental API"}]}`, iv)
	if err != nil || len(got.Responses) != 1 || got.Responses[0].Value != "Experimental API" {
		t.Fatalf("partial reply: %+v, %v", got, err)
	}
}

func TestParseStructuredReplyRejects(t *testing.T) {
	t.Parallel()
	iv := testInterview(t)
	cases := []struct{ name, text, want string }{
		{"prose", "Use the stable API.", "not JSON"},
		{"empty", "", "not JSON"},
		{"fenced prose", "```\nuse the stable one\n```", "not JSON"},
		{"bad JSON", `{"responses":[`, "reply JSON"},
		{"bad JSON in fence", "```json\n{\"responses\": [}\n```", "reply JSON"},
		{"array", `[{"id":"api","value":"Stable API"}]`, "reply JSON"},
		{"no responses", `{"answers":[]}`, `no "responses" array`},
		{"unknown id", `{"responses":[{"id":"nope","value":"x"}]}`, `"nope" names no answerable question`},
		{"info id", `{"responses":[{"id":"note","value":"ok"}]}`, `"note" names no answerable question`},
		{"repeated id", `{"responses":[{"id":"constraints","value":"a"},{"id":"constraints","value":"b"}]}`, `"constraints" repeated`},
		{"single not an option", `{"responses":[{"id":"api","value":"Beta API"}]}`, "want one of the option labels"},
		{"single as array", `{"responses":[{"id":"api","value":["Stable API"]}]}`, "want one of the option labels"},
		{"multi with bad option", `{"responses":[{"id":"tags","value":["a","z"]}]}`, `"z" is not an option`},
		{"multi as string", `{"responses":[{"id":"tags","value":"a"}]}`, "want an array of option labels"},
		{"text as number", `{"responses":[{"id":"constraints","value":42}]}`, "want a string"},
		{"image as object", `{"responses":[{"id":"shot","value":{"path":"x"}}]}`, "want a string"},
	}
	for _, c := range cases {
		got, err := ParseStructuredReply(c.text, iv)
		if err == nil {
			t.Errorf("%s: accepted %q as %+v", c.name, c.text, got)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q does not mention %q", c.name, err, c.want)
		}
	}
}

// The answer example the supervisor is shown is itself a valid reply.
func TestInterviewRenderExampleParses(t *testing.T) {
	t.Parallel()
	iv := testInterview(t)
	text := iv.Render()
	for _, s := range []string{"Interview: T", "[api] (single) Which API?", "  * Stable API", "[note] (info) FYI", "```json"} {
		if !strings.Contains(text, s) {
			t.Errorf("render lacks %q:\n%s", s, text)
		}
	}
	sr, err := ParseStructuredReply(text, iv)
	if err != nil {
		t.Fatalf("the rendered example does not parse: %v\n%s", err, text)
	}
	ids := []string{}
	for _, r := range sr.Responses {
		ids = append(ids, r.ID)
	}
	if strings.Join(ids, ",") != "api,tags,constraints,shot" {
		t.Fatalf("example answers %v, want every non-info question", ids)
	}
}

func newStoreWithQuestion(t *testing.T) (Store, *Question) {
	t.Helper()
	st := Store{Dir: filepath.Join(t.TempDir(), "runs")}
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

func TestPreviewStaysWithinLimit(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("abcdefghij", 500) // 5,000 chars
	p := Preview(long, 2048)
	if n := utf8.RuneCountInString(p); n > 2048 || n < 2000 {
		t.Fatalf("preview of 5,000 chars has %d chars, want at most 2,048 (and close to it)", n)
	}
	if !strings.HasPrefix(long, strings.TrimSuffix(p, "…")) || !strings.HasSuffix(p, "…") {
		t.Fatalf("preview is not a marked prefix: %q…", p[:40])
	}
	if Preview("short", 2048) != "short" || Preview(strings.Repeat("x", 2048), 2048) != strings.Repeat("x", 2048) {
		t.Fatal("text within the limit must be kept whole")
	}
	multi := strings.Repeat("é", 3000)
	if p := Preview(multi, 100); utf8.RuneCountInString(p) > 100 || !utf8.ValidString(p) {
		t.Fatalf("multi-byte preview: %d chars, valid %t", utf8.RuneCountInString(p), utf8.ValidString(p))
	}
}

func TestStoreCreateListUpdate(t *testing.T) {
	t.Parallel()
	st := Store{Dir: filepath.Join(t.TempDir(), "runs")}
	if rs, err := st.List(); err != nil || len(rs) != 0 {
		t.Fatalf("List of a missing dir: %v, %v", rs, err)
	}
	t0 := time.Now().UTC()
	for i, id := range []string{"r-old", "r-new", "r-mid"} {
		off := map[int]time.Duration{0: 0, 1: 2 * time.Second, 2: time.Second}[i]
		if err := st.Create(&Run{ID: id, Agent: "w", State: StateStarting, CreatedAt: t0.Add(off)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Create(&Run{ID: "r-old", Agent: "w"}); err == nil {
		t.Fatal("Create of an existing run succeeded")
	}
	if err := os.WriteFile(filepath.Join(st.Dir, "stray-file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(st.Dir, "not-a-run"), 0o700); err != nil {
		t.Fatal(err)
	}
	rs, err := st.List()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range rs {
		ids = append(ids, r.ID)
	}
	if strings.Join(ids, ",") != "r-new,r-mid,r-old" {
		t.Fatalf("List order %v, want newest first and only runs", ids)
	}
	r, _ := st.Load("r-mid")
	if r.OutputPath != filepath.Join(st.RunDir("r-mid"), "output.log") {
		t.Fatalf("output path %q", r.OutputPath)
	}
	if fi, err := os.Stat(filepath.Join(st.RunDir("r-mid"), "questions")); err != nil || !fi.IsDir() {
		t.Fatalf("questions dir: %v", err)
	}
	// Update is serialised by the run's lock: no increment is lost.
	var wg sync.WaitGroup
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := st.Update("r-mid", func(r *Run) error { r.Index++; return nil }); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if r, _ := st.Load("r-mid"); r.Index != 40 {
		t.Fatalf("index after 40 locked increments = %d", r.Index)
	}
	if _, err := st.Update("r-mid", func(*Run) error { return errors.New("nope") }); err == nil {
		t.Fatal("Update did not return fn's error")
	}
	if _, err := st.Update("missing", func(*Run) error { return nil }); err == nil {
		t.Fatalf("Update of a missing run: %v", err)
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

func TestChildEnv(t *testing.T) {
	t.Parallel()
	r := &Run{ID: "r1", Agent: "worker", Index: 2, Supervisor: "sup-id", ChildSession: "subagent-worker-r1-3", ChildSessionID: "child-r1",
		Env: []string{"PATH=/bin", "INTERCOM_SESSION=the-supervisor", "INTERCOM_ANSWER_FILE=/stale", "INTERCOM_RUN_ID=old", "KEEP=1", "INTERCOM_SOCKET=/s"}}
	envMap := func(env []string) map[string][]string {
		m := map[string][]string{}
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			m[k] = append(m[k], v)
		}
		return m
	}
	m := envMap(ChildEnv(r, "/home/x"))
	want := map[string]string{
		"PATH": "/bin", "KEEP": "1", "INTERCOM_SOCKET": "/s", "INTERCOM_HOME": "/home/x",
		"INTERCOM_SUPERVISOR": "sup-id", "INTERCOM_RUN_ID": "r1", "INTERCOM_CHILD_AGENT": "worker", "INTERCOM_CHILD_INDEX": "2",
		"INTERCOM_SESSION": "child-r1", "INTERCOM_CHILD_SESSION": "subagent-worker-r1-3",
		"PI_SUBAGENT_ORCHESTRATOR_TARGET": "sup-id", "PI_SUBAGENT_RUN_ID": "r1", "PI_SUBAGENT_CHILD_AGENT": "worker", "PI_SUBAGENT_CHILD_INDEX": "2",
	}
	for k, v := range want {
		if len(m[k]) != 1 || m[k][0] != v {
			t.Errorf("%s = %v, want exactly [%s]", k, m[k], v)
		}
	}
	if _, ok := m["INTERCOM_ANSWER_FILE"]; ok {
		t.Errorf("a stale INTERCOM_ANSWER_FILE was passed on: %v", m["INTERCOM_ANSWER_FILE"])
	}
	r.AnswerFile = "/runs/r0/questions/q1/answer.json"
	m = envMap(ChildEnv(r, "/home/x"))
	if len(m["INTERCOM_ANSWER_FILE"]) != 1 || m["INTERCOM_ANSWER_FILE"][0] != r.AnswerFile {
		t.Errorf("INTERCOM_ANSWER_FILE = %v", m["INTERCOM_ANSWER_FILE"])
	}
}
