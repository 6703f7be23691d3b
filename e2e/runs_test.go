package e2e

// Supervised runs (SPEC "Supervised runs (F8–F10)", issue 5): agent-runs
// launches children under a detached owner; a child (a small shell script)
// asks its supervisor with `intercom contact-supervisor`; questions and
// answers live on disk and survive the death of the child, the supervisor's
// connection and the broker. Everything runs the real binaries; the only
// direct file writes are the paging test's fixtures (paging is a pure read
// of those files) and the simulated interrupted revival.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/intercom-dev/intercom/internal/runs"
	"github.com/intercom-dev/intercom/internal/ui"
	"github.com/intercom-dev/intercom/pkg/intercom"
)

const rsWait = 30 * time.Second // upper bound for anything awaited

// rsH is a home whose commands find the built binaries on PATH (so do the
// children agent-runs starts). At cleanup every process still working for
// this home (run owners, children, their intercom calls, brokers they
// respawned) is killed before the harness removes the home.
func rsH(t *testing.T) *H {
	t.Helper()
	h := newH(t)
	h.BinOnPath()
	t.Cleanup(func() { rsKillHome(t, h) })
	return h
}

// rsHomePids lists live processes whose environment or command line names
// h's home.
func rsHomePids(h *H) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() || !alive(pid) {
			continue
		}
		mine := false
		if env, err := os.ReadFile("/proc/" + e.Name() + "/environ"); err == nil {
			for _, kv := range strings.Split(string(env), "\x00") {
				if kv == "INTERCOM_HOME="+h.Home {
					mine = true
				}
			}
		}
		if cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil &&
			strings.Contains(string(cmdline), "\x00--home\x00"+h.Home+"\x00") {
			mine = true
		}
		if mine {
			out = append(out, pid)
		}
	}
	return out
}

func rsKillHome(t *testing.T, h *H) {
	deadline := time.Now().Add(15 * time.Second)
	for {
		pids := rsHomePids(h)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("processes of %s survive cleanup: %v", h.Home, pids)
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// rsScript writes a shell script into dir. Children run it as
// `/bin/sh PATH`, so no freshly written file is ever exec'd (no ETXTBSY
// under parallel forks).
func rsScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("set -u\n"+body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// rsOK runs agent-runs and fails unless it exits 0.
func rsOK(t *testing.T, h *H, dir string, args ...string) string {
	t.Helper()
	r := h.RunsIn(dir, args...)
	if r.Code != 0 {
		t.Fatalf("agent-runs %q: exit %d\nstdout: %s\nstderr: %s", args, r.Code, r.Stdout, r.Stderr)
	}
	return r.Stdout
}

// rsJSON runs agent-runs --json and decodes stdout.
func rsJSON(t *testing.T, h *H, v any, args ...string) {
	t.Helper()
	out := rsOK(t, h, h.Cwd, append([]string{"--json"}, args...)...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("decode agent-runs %q: %v\n%s", args, err, out)
	}
}

// rsStart starts a run (no --wait) from dir and returns its id.
func rsStart(t *testing.T, h *H, dir, supervisor string, args ...string) string {
	t.Helper()
	out := rsOK(t, h, dir, append([]string{"--json", "--supervisor", supervisor, "start"}, args...)...)
	var res struct {
		RunID string `json:"run_id"`
		State string `json:"state"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || runs.ValidID(res.RunID) != nil || res.State != "running" {
		t.Fatalf("start printed %q (%v)", out, err)
	}
	return res.RunID
}

func rsStore(h *H) runs.Files { return runs.Files{Dir: h.Layout.RunsDir()} }

func rsLoad(t *testing.T, h *H, id string) *runs.Run {
	t.Helper()
	r, err := rsStore(h).Load(id)
	if err != nil {
		t.Fatalf("load run %s: %v", id, err)
	}
	return r
}

// rsAwaitRun waits until run id satisfies cond and returns it.
func rsAwaitRun(t *testing.T, h *H, id, what string, cond func(*runs.Run) bool) *runs.Run {
	t.Helper()
	var r *runs.Run
	Eventually(t, rsWait, func() bool {
		var err error
		r, err = rsStore(h).Load(id)
		return err == nil && cond(r)
	}, "run %s: %s", id, what)
	return r
}

func rsFinished(state string) func(*runs.Run) bool {
	return func(r *runs.Run) bool { return r.State == state }
}

func rsOutput(h *H, id string) string {
	data, _ := os.ReadFile(filepath.Join(rsStore(h).RunDir(id), "output.log"))
	return string(data)
}

// rsAwaitOutput waits until the run's output.log contains s.
func rsAwaitOutput(t *testing.T, h *H, id, s string, timeout time.Duration) string {
	t.Helper()
	var out string
	Eventually(t, timeout, func() bool {
		out = rsOutput(h, id)
		return strings.Contains(out, s)
	}, "output of run %s to contain %q (have %q)", id, s, func() string { return rsOutput(h, id) }())
	return out
}

// rsQuestion is one row of `agent-runs questions --json`.
type rsQuestion struct {
	ID           string `json:"id"`
	RunID        string `json:"run_id"`
	Agent        string `json:"agent"`
	Index        int    `json:"index"`
	Reason       string `json:"reason"`
	State        string `json:"state"`
	Preview      string `json:"preview"`
	AskID        string `json:"ask_id"`
	QuestionPath string `json:"question_path"`
	AnswerPath   string `json:"answer_path"`
	AnswerCmd    string `json:"answer_command"`
}

type rsPage struct {
	Questions  []rsQuestion `json:"questions"`
	Total      int          `json:"total"`
	Offset     int          `json:"offset"`
	NextOffset *int         `json:"next_offset"`
}

func rsQuestions(t *testing.T, h *H, args ...string) rsPage {
	t.Helper()
	var p rsPage
	rsJSON(t, h, &p, append([]string{"questions"}, args...)...)
	return p
}

// rsAwaitQuestion waits for the run's only question to be saved with its
// ask id and returns it.
func rsAwaitQuestion(t *testing.T, h *H, run string) *runs.Question {
	t.Helper()
	var q *runs.Question
	Eventually(t, rsWait, func() bool {
		qs, err := rsStore(h).Questions(run)
		if err != nil || len(qs) != 1 || qs[0].AskID == "" {
			return false
		}
		q = qs[0]
		return true
	}, "run %s to save one question with its ask id", run)
	return q
}

// rsAwaitNewQuestion waits for a question of run other than those in seen.
func rsAwaitNewQuestion(t *testing.T, h *H, run string, seen ...string) *runs.Question {
	t.Helper()
	var q *runs.Question
	Eventually(t, rsWait, func() bool {
		qs, _ := rsStore(h).Questions(run)
		for _, x := range qs {
			old := false
			for _, s := range seen {
				old = old || x.ID == s
			}
			if !old && x.AskID != "" {
				q = x
				return true
			}
		}
		return false
	}, "a new question of run %s", run)
	return q
}

func rsQState(t *testing.T, h *H, run, qid string) string {
	t.Helper()
	q, err := rsStore(h).LoadQuestion(run, qid)
	if err != nil {
		t.Fatalf("load question %s/%s: %v", run, qid, err)
	}
	return q.State
}

// rsNextMessage returns the next "message" event of an attach --json.
func rsNextMessage(t *testing.T, p *Proc) map[string]any {
	t.Helper()
	for {
		ev := p.Event(rsWait)
		if ev["event"] == "message" {
			return ev
		}
	}
}

func rsStr(v any) string { s, _ := v.(string); return s }

func rsSub(m map[string]any, k string) map[string]any { v, _ := m[k].(map[string]any); return v }

// rsPending returns the supervisor's unresolved inbound asks.
func rsPending(t *testing.T, h *H, session string) []map[string]any {
	t.Helper()
	var p struct {
		Asks []map[string]any `json:"asks"`
	}
	h.JSON(&p, "--session", session, "pending")
	return p.Asks
}

// rsRunCount counts run directories on disk.
func rsRunCount(t *testing.T, h *H) int {
	t.Helper()
	rs, err := rsStore(h).List()
	if err != nil {
		t.Fatal(err)
	}
	return len(rs)
}

// rsGroupAlive reports whether any process of process group pgid runs.
func rsGroupAlive(pgid int) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if g, err := syscall.Getpgid(pid); err == nil && g == pgid && alive(pid) {
			return true
		}
	}
	return false
}

// rsCheckHeader checks the metadata lines of a supervisor message.
func rsCheckHeader(t *testing.T, text, heading, run, agent string, index int, child string) {
	t.Helper()
	lines := strings.Split(text, "\n")
	want := []string{heading, "Run: " + run, "Agent: " + agent, fmt.Sprintf("Child index: %d", index), "Child intercom target: " + child}
	if len(lines) < len(want) {
		t.Fatalf("supervisor message too short: %q", text)
	}
	for i, w := range want {
		if lines[i] != w {
			t.Fatalf("supervisor message line %d is %q, want %q\n%s", i+1, lines[i], w, text)
		}
	}
}

// TestRunsNeedDecisionRoundTrip: the child's question reaches the attached
// supervisor formatted with its run metadata; `intercom reply` answers the
// first question and `agent-runs answer` the second; the child prints
// "Reply from supervisor: …" each time; question states go awaiting_input →
// answered, the saved answers record their source, and the supervisor's
// pending asks are cleared. Repeating a consumed answer, or `continue` on
// the completed run, launches nothing.
func TestRunsNeedDecisionRoundTrip(t *testing.T) {
	t.Parallel()
	h := rsH(t)
	sup, sev := h.Attach("--name", "sup")
	supID := rsStr(sev["id"])
	script := rsScript(t, h.Cwd, "child.sh", `
echo "child started"
r=$(intercom contact-supervisor --reason need_decision -m "$1"); rc=$?
echo "first: $r (exit $rc)"
r=$(intercom contact-supervisor --reason need_decision --message "$2"); rc=$?
echo "second: $r (exit $rc)"
`)
	id := rsStart(t, h, h.Cwd, "sup", "--agent", "worker", "--index", "1", "--", "/bin/sh", script, "Which API should I use?", "Which region?")
	child := "subagent-worker-" + id + "-2"

	m := rsNextMessage(t, sup)
	text := rsStr(m["text"])
	rsCheckHeader(t, text, "Subagent needs a supervisor decision.", id, "worker", 1, child)
	if !strings.HasSuffix(text, "\n\nWhich API should I use?") || m["expects_reply"] != true || m["delivery"] != "steer" ||
		rsSub(m, "from")["id"] != "child-"+id || rsSub(m, "from")["name"] != child {
		t.Fatalf("supervisor got %v", m)
	}
	q1 := rsAwaitQuestion(t, h, id)
	if q1.AskID != rsStr(m["id"]) || q1.Supervisor != supID || q1.Reason != "need_decision" {
		t.Fatalf("saved question %+v does not match the ask %v", q1, m["id"])
	}
	page := rsQuestions(t, h, "--supervisor", "sup")
	if page.Total != 1 || page.Questions[0].ID != q1.ID || page.Questions[0].State != "awaiting_input" ||
		page.Questions[0].Preview != "Which API should I use?" || page.Questions[0].AnswerPath != "" ||
		!strings.Contains(page.Questions[0].AnswerCmd, "agent-runs answer "+id+" --question-id "+q1.ID) {
		t.Fatalf("questions while waiting: %+v", page)
	}
	if r := rsLoad(t, h, id); r.State != runs.StateRunning || r.ChildSession != child || !runs.Alive(r.ChildPid) {
		t.Fatalf("run while waiting: %+v", r)
	}
	if asks := rsPending(t, h, "sup"); len(asks) != 1 || asks[0]["reply_to"] != m["id"] {
		t.Fatalf("supervisor pending: %v", asks)
	}

	// 1. The supervisor's live reply.
	h.OK("--session", "sup", "reply", "Use the stable API.")
	rsAwaitOutput(t, h, id, "first: Reply from supervisor: Use the stable API. (exit 0)", rsWait)
	if st := rsQState(t, h, id, q1.ID); st != runs.QAnswered {
		t.Fatalf("question 1 state after the reply: %s", st)
	}
	if a, err := rsStore(h).LoadAnswer(id, q1.ID); err != nil || a.Message != "Use the stable API." || a.Source != "intercom reply" {
		t.Fatalf("saved answer 1: %+v, %v", a, err)
	}

	// 2. agent-runs answer to the next question.
	m2 := rsNextMessage(t, sup)
	if !strings.HasSuffix(rsStr(m2["text"]), "\n\nWhich region?") {
		t.Fatalf("second question: %v", m2)
	}
	q2 := rsAwaitNewQuestion(t, h, id, q1.ID)
	if asks := rsPending(t, h, "sup"); len(asks) != 1 || asks[0]["reply_to"] != m2["id"] {
		t.Fatalf("supervisor pending before answer 2: %v", asks)
	}
	var rec struct {
		Saved, Identical, Delivered bool
		RevivedRun                  string `json:"revived_run"`
		NeedsContinue               bool   `json:"needs_continue"`
		AnswerPath                  string `json:"answer_path"`
		Note                        string
	}
	rsJSON(t, h, &rec, "answer", id, "--question-id", q2.ID, "eu-west-1")
	// Delivered as the reply, or read from the answer file by the waiting
	// child before the answer was sent (it polls the file too).
	if !rec.Saved || rec.Identical || (!rec.Delivered && rec.Note != "answer saved and read by the waiting child") || rec.RevivedRun != "" || rec.AnswerPath != rsStore(h).AnswerPath(id, q2.ID) {
		t.Fatalf("answer receipt %+v", rec)
	}
	rsAwaitOutput(t, h, id, "second: Reply from supervisor: eu-west-1 (exit 0)", rsWait)
	r := rsAwaitRun(t, h, id, "completed", rsFinished(runs.StateCompleted))
	if r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("completed run: %+v", r)
	}
	if a, err := rsStore(h).LoadAnswer(id, q2.ID); err != nil || a.Message != "eu-west-1" || a.Source != "agent-runs answer" {
		t.Fatalf("saved answer 2: %+v, %v", a, err)
	}
	if asks := rsPending(t, h, "sup"); len(asks) != 0 {
		t.Fatalf("supervisor pending after both answers: %v", asks)
	}
	page = rsQuestions(t, h, "--id", id)
	if page.Total != 2 {
		t.Fatalf("questions after: %+v", page)
	}
	for _, q := range page.Questions {
		if q.State != "answered" || q.AnswerPath == "" || q.AnswerCmd != "" {
			t.Fatalf("answered question row %+v", q)
		}
	}
	if n := strings.Count(rsOutput(h, id), "Reply from supervisor"); n != 2 {
		t.Fatalf("child printed %d replies:\n%s", n, rsOutput(h, id))
	}

	// A consumed answer repeated, or continue on the finished run, launches
	// nothing.
	rsJSON(t, h, &rec, "answer", id, "--question-id", q2.ID, "eu-west-1")
	if rec.Saved || !rec.Identical || rec.Delivered || rec.RevivedRun != "" || rec.NeedsContinue {
		t.Fatalf("repeated consumed answer: %+v", rec)
	}
	if res := h.Runs("continue", id); res.Code != 1 || !strings.Contains(res.Stderr, "no saved, unconsumed answer") {
		t.Fatalf("continue of a completed run: exit %d, %q", res.Code, res.Stderr)
	}
	if n := rsRunCount(t, h); n != 1 {
		t.Fatalf("%d runs after repeats, want 1", n)
	}
}

// TestRunsInterviewStructuredReply: an interview_request shows the
// supervisor the structured questions with a fenced answer example; a
// fenced-JSON reply comes back in --json as structured_reply, a prose reply
// still succeeds with structured_reply_error beside the raw reply.
func TestRunsInterviewStructuredReply(t *testing.T) {
	t.Parallel()
	h := rsH(t)
	sup, _ := h.Attach("--name", "sup")
	iv := filepath.Join(h.Cwd, "iv.json")
	if err := os.WriteFile(iv, []byte(`{"title":"API migration choices","questions":[
		{"id":"api","type":"single","question":"Which API should I target?","options":["Stable API","Experimental API"]},
		{"id":"constraints","type":"text","question":"What constraints should I preserve?"},
		{"id":"note","type":"info","question":"The old API is removed next month."}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	script := rsScript(t, h.Cwd, "child.sh", `
out=$(intercom --json contact-supervisor --reason interview_request -m "Before I migrate:" --interview "$1"); rc=$?
printf 'FIRST rc=%s %s\n' "$rc" "$out"
out=$(intercom --json contact-supervisor --reason interview_request --interview "$1"); rc=$?
printf 'SECOND rc=%s %s\n' "$rc" "$out"
`)
	id := rsStart(t, h, h.Cwd, "sup", "--agent", "migrator", "--", "/bin/sh", script, iv)

	m := rsNextMessage(t, sup)
	text := rsStr(m["text"])
	rsCheckHeader(t, text, "Subagent requests a structured supervisor interview.", id, "migrator", 0, "subagent-migrator-"+id)
	for _, s := range []string{"Before I migrate:", "Interview: API migration choices", "[api] (single) Which API should I target?",
		"  * Experimental API", "[note] (info)", "```json", `"responses"`} {
		if !strings.Contains(text, s) {
			t.Fatalf("interview message lacks %q:\n%s", s, text)
		}
	}
	q1 := rsAwaitQuestion(t, h, id)
	if q1.Interview == nil || len(q1.Interview.Questions) != 3 || q1.Reason != "interview_request" {
		t.Fatalf("saved interview question %+v", q1)
	}
	valid := "Here you go:\n```json\n{\"responses\":[{\"id\":\"api\",\"value\":\"Stable API\"},{\"id\":\"constraints\",\"value\":\"Keep the public error shape.\"}]}\n```"
	h.OK("--session", "sup", "reply", valid)

	type childOut struct {
		Reply           string `json:"reply"`
		QuestionID      string `json:"question_id"`
		RunID           string `json:"run_id"`
		StructuredReply *struct {
			Responses []struct {
				ID    string `json:"id"`
				Value any    `json:"value"`
			} `json:"responses"`
		} `json:"structured_reply"`
		StructuredReplyError *string `json:"structured_reply_error"`
	}
	parse := func(prefix string) childOut {
		t.Helper()
		out := rsAwaitOutput(t, h, id, prefix, rsWait)
		line := out[strings.Index(out, prefix)+len(prefix):]
		line, _, _ = strings.Cut(line, "\n")
		var co childOut
		if err := json.Unmarshal([]byte(line), &co); err != nil {
			t.Fatalf("child output after %q is not JSON: %q", prefix, line)
		}
		return co
	}
	first := parse("FIRST rc=0 ")
	if first.Reply != valid || first.QuestionID != q1.ID || first.RunID != id || first.StructuredReplyError != nil || first.StructuredReply == nil {
		t.Fatalf("valid structured reply: %+v", first)
	}
	got := first.StructuredReply.Responses
	if len(got) != 2 || got[0].ID != "api" || got[0].Value != "Stable API" || got[1].ID != "constraints" || got[1].Value != "Keep the public error shape." {
		t.Fatalf("structured_reply %+v", got)
	}

	m2 := rsNextMessage(t, sup)
	if !strings.HasPrefix(rsStr(m2["text"]), "Subagent requests a structured supervisor interview.\n") {
		t.Fatalf("second interview message %v", m2)
	}
	q2 := rsAwaitNewQuestion(t, h, id, q1.ID)
	rsOK(t, h, h.Cwd, "answer", id, "--question-id", q2.ID, "Stable,", "I", "think.")
	second := parse("SECOND rc=0 ")
	if second.Reply != "Stable, I think." || second.StructuredReply != nil || second.StructuredReplyError == nil || *second.StructuredReplyError == "" {
		t.Fatalf("invalid structured reply: %+v", second)
	}
	rsAwaitRun(t, h, id, "completed", rsFinished(runs.StateCompleted))
	for _, q := range []string{q1.ID, q2.ID} {
		if st := rsQState(t, h, id, q); st != runs.QAnswered {
			t.Fatalf("question %s: %s", q, st)
		}
	}
}

// TestRunsInterviewValidationBeforeSaving: invalid interview documents (and
// flag misuse) exit 2 with the rule they break, before any question is
// saved or sent: the supervisor's first message is the valid interview read
// from stdin afterwards, and the run holds exactly that one question.
func TestRunsInterviewValidationBeforeSaving(t *testing.T) {
	t.Parallel()
	h := rsH(t)
	sup, _ := h.Attach("--name", "sup")
	dir := t.TempDir()
	docs := map[string]string{
		"dup":      `{"questions":[{"id":"a","type":"text","question":"x"},{"id":"a","type":"text","question":"y"}]}`,
		"single":   `{"questions":[{"id":"a","type":"single","question":"x"}]}`,
		"textopts": `{"questions":[{"id":"a","type":"text","question":"x","options":["o"]}]}`,
		"badtype":  `{"questions":[{"id":"a","type":"dropdown","question":"x"}]}`,
		"notjson":  `{"questions":[`,
		"good":     `{"questions":[{"id":"go","type":"single","question":"Go ahead?","options":["yes","no"]}]}`,
	}
	for name, body := range docs {
		if err := os.WriteFile(filepath.Join(dir, name+".json"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	script := rsScript(t, h.Cwd, "child.sh", `
D="$1"
for n in dup single textopts badtype notjson; do
  intercom contact-supervisor --reason interview_request --interview "$D/$n.json" 2>&1
  echo "bad:$n exit $?"
done
intercom contact-supervisor --reason interview_request 2>&1; echo "bad:nofile exit $?"
intercom contact-supervisor --reason need_decision --interview "$D/good.json" -m x 2>&1; echo "bad:decisionwithiv exit $?"
intercom contact-supervisor --reason need_decision 2>&1; echo "bad:nomessage exit $?"
echo "bad ones done"
out=$(intercom contact-supervisor --reason interview_request --interview - < "$D/good.json"); rc=$?
echo "good: $out (exit $rc)"
`)
	id := rsStart(t, h, h.Cwd, "sup", "--agent", "w", "--", "/bin/sh", script, dir)
	m := rsNextMessage(t, sup)
	if !strings.Contains(rsStr(m["text"]), "[go] (single) Go ahead?") {
		t.Fatalf("the supervisor's first message is not the valid interview: %v", m)
	}
	out := rsAwaitOutput(t, h, id, "bad ones done", rsWait)
	for name, want := range map[string]string{
		"dup": `duplicate id "a"`, "single": "type single requires options", "textopts": "type text does not take options",
		"badtype": `invalid type "dropdown"`, "notjson": "not valid JSON",
		"nofile": "requires --interview", "decisionwithiv": "only valid with --reason interview_request",
		"nomessage": "requires --message",
	} {
		if !strings.Contains(out, "bad:"+name+" exit 2") {
			t.Errorf("%s did not exit 2:\n%s", name, out)
		}
		if !strings.Contains(out, want) {
			t.Errorf("%s: output lacks %q", name, want)
		}
	}
	q := rsAwaitQuestion(t, h, id) // exactly one question saved: the valid one
	if q.Interview == nil || q.Interview.Questions[0].ID != "go" {
		t.Fatalf("the saved question is %+v", q)
	}
	rsOK(t, h, h.Cwd, "answer", id, "--question-id", q.ID, `{"responses":[{"id":"go","value":"yes"}]}`)
	rsAwaitOutput(t, h, id, `good: Reply from supervisor: {"responses":[{"id":"go","value":"yes"}]} (exit 0)`, rsWait)
	if qs, _ := rsStore(h).Questions(id); len(qs) != 1 {
		t.Fatalf("run holds %d questions, want 1", len(qs))
	}
}

// TestRunsProgressUpdateNonBlocking: progress_update returns exit 0 at once
// while the supervisor is busy and does nothing; it is queued (held while
// busy: the later steer completion notice overtakes it) in replace mode, so
// when the supervisor reports idle it gets only the newest update.
func TestRunsProgressUpdateNonBlocking(t *testing.T) {
	t.Parallel()
	h := rsH(t)
	sup, _ := h.Attach("--name", "sup")
	h.OK("--session", "sup", "state", "thinking")
	script := rsScript(t, h.Cwd, "child.sh", `
intercom contact-supervisor --reason progress_update -m "step 1: found the bug"; echo "progress 1 exit $?"
out=$(intercom --json contact-supervisor --reason progress_update -m "step 2: bug is in the retry wrapper"); rc=$?
echo "progress 2 exit $rc $out"
`)
	id := rsStart(t, h, h.Cwd, "sup", "--agent", "fixer", "--", "/bin/sh", script)
	r := rsAwaitRun(t, h, id, "completed while the supervisor is busy", rsFinished(runs.StateCompleted))
	out := rsOutput(h, id)
	if !strings.Contains(out, "Progress update accepted for supervisor sup.") || !strings.Contains(out, "progress 1 exit 0") ||
		!strings.Contains(out, `progress 2 exit 0 {"accepted":true,"id":"m`) || !strings.Contains(out, `"supervisor":"sup"}`) || *r.ExitCode != 0 {
		t.Fatalf("child output:\n%s", out)
	}
	if qs, _ := rsStore(h).Questions(id); len(qs) != 0 {
		t.Fatalf("progress updates saved questions: %v", qs)
	}
	// The reference: a progress update steers at the next tool boundary, so
	// the busy supervisor gets both updates, in order, before the
	// completion notice.
	for _, step := range []string{"step 1: found the bug", "step 2: bug is in the retry wrapper"} {
		m := rsNextMessage(t, sup)
		text := rsStr(m["text"])
		rsCheckHeader(t, text, "Subagent progress update.", id, "fixer", 0, "subagent-fixer-"+id)
		if !strings.HasSuffix(text, "\n\n"+step) || m["delivery"] != "steer" || m["thread"] != nil || m["expects_reply"] == true {
			t.Fatalf("progress update as delivered: %v, want a steer of %q", m, step)
		}
	}
	m := rsNextMessage(t, sup)
	if !strings.HasPrefix(rsStr(m["text"]), "Subagent run finished.\nRun: "+id+"\n") {
		t.Fatalf("after the updates the busy supervisor got %v, want the completion notice", m)
	}
}

// TestSupervisorBrokerRestartKeepsQuestion: the broker is killed (-9) while
// the child waits; the question is still listed, and both an `agent-runs
// answer` and, after a second kill, the supervisor's own `intercom reply`
// (to the ask the child re-registered) reach the same waiting child, which
// then completes.
func TestSupervisorBrokerRestartKeepsQuestion(t *testing.T) {
	t.Parallel()
	h := rsH(t)
	sup, _ := h.Attach("--name", "sup")
	script := rsScript(t, h.Cwd, "child.sh", `
r=$(intercom contact-supervisor --reason need_decision -m "Retry on 503?"); echo "first: $r (exit $?)"
r=$(intercom contact-supervisor --reason need_decision -m "Retry on 504?"); echo "second: $r (exit $?)"
`)
	id := rsStart(t, h, h.Cwd, "sup", "--agent", "worker", "--", "/bin/sh", script)
	rsNextMessage(t, sup)
	q1 := rsAwaitQuestion(t, h, id)
	childPid := rsLoad(t, h, id).ChildPid

	h.KillBroker()
	page := rsQuestions(t, h) // reads the files; needs no broker
	if page.Total != 1 || page.Questions[0].ID != q1.ID || page.Questions[0].State != "awaiting_input" {
		t.Fatalf("questions with the broker down: %+v", page)
	}
	page = rsQuestions(t, h, "--supervisor", "sup") // brings a broker back
	if page.Total != 1 || page.Questions[0].ID != q1.ID {
		t.Fatalf("supervisor's questions after the restart: %+v", page)
	}
	rsOK(t, h, h.Cwd, "answer", id, "--question-id", q1.ID, "yes, three times")
	rsAwaitOutput(t, h, id, "first: Reply from supervisor: yes, three times (exit 0)", 2*rsWait)
	if st := rsQState(t, h, id, q1.ID); st != runs.QAnswered {
		t.Fatalf("question 1 after the restart: %s", st)
	}

	q2 := rsAwaitNewQuestion(t, h, id, q1.ID)
	h.KillBroker()
	// The child re-registers its ask with the new broker; the supervisor
	// finds it pending and replies the ordinary way.
	Eventually(t, rsWait, func() bool {
		asks := rsPending(t, h, "sup")
		return len(asks) == 1 && asks[0]["reply_to"] == q2.AskID
	}, "the re-registered ask %s in the supervisor's pending list", q2.AskID)
	h.OK("--session", "sup", "reply", "--to", q2.AskID, "no")
	rsAwaitOutput(t, h, id, "second: Reply from supervisor: no (exit 0)", rsWait)
	r := rsAwaitRun(t, h, id, "completed", rsFinished(runs.StateCompleted))
	if r.ChildPid != childPid || r.RevivedTo != "" {
		t.Fatalf("the child was replaced instead of answered: %+v", r)
	}
	if a, err := rsStore(h).LoadAnswer(id, q2.ID); err != nil || a.Message != "no" {
		t.Fatalf("answer 2 saved as %+v, %v", a, err)
	}
	if n := rsRunCount(t, h); n != 1 {
		t.Fatalf("%d runs, want 1", n)
	}
}

// rsKillChild SIGKILLs the child's process group and waits until the owner
// records the exit.
func rsKillChild(t *testing.T, h *H, id string) {
	t.Helper()
	pid := rsLoad(t, h, id).ChildPid
	if pid <= 0 || !runs.Alive(pid) {
		t.Fatalf("run %s has no live child (pid %d)", id, pid)
	}
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -%d: %v", pid, err)
	}
	rsAwaitRun(t, h, id, "failed after the kill", rsFinished(runs.StateFailed))
	Eventually(t, rsWait, func() bool { return !rsGroupAlive(pid) }, "process group %d to die", pid)
}

const rsRevivableChild = `
if [ -n "${INTERCOM_ANSWER_FILE:-}" ]; then
  echo "revived as $INTERCOM_RUN_ID with INTERCOM_ANSWER_FILE=$INTERCOM_ANSWER_FILE"
  cat "$INTERCOM_ANSWER_FILE"; echo
  echo "revived done"
  exit 0
fi
echo "first life"
intercom contact-supervisor --reason need_decision -m "Delete the old tables?"
echo "contact returned $?"
`

// TestRunsAnswerRevivesKilledChild: the child is killed while waiting; the
// answer is saved and revives the saved launch as a new run (revived_from)
// that gets the answer through INTERCOM_ANSWER_FILE; an identical repeat
// launches nothing; a conflicting answer exits 1 and the first is kept.
func TestRunsAnswerRevivesKilledChild(t *testing.T) {
	t.Parallel()
	h := rsH(t)
	sup, _ := h.Attach("--name", "sup")
	script := rsScript(t, h.Cwd, "child.sh", rsRevivableChild)
	id := rsStart(t, h, h.Cwd, "sup", "--agent", "janitor", "--index", "0", "--", "/bin/sh", script)
	rsNextMessage(t, sup)
	q := rsAwaitQuestion(t, h, id)
	rsKillChild(t, h, id)
	if out := rsOutput(h, id); !strings.Contains(out, "first life") || strings.Contains(out, "contact returned") {
		t.Fatalf("killed child's output:\n%s", out)
	}
	if st := rsQState(t, h, id, q.ID); st != runs.QAwaiting {
		t.Fatalf("question after the child died: %s", st)
	}

	type receipt struct {
		Saved, Identical, Delivered bool
		RevivedRun                  string `json:"revived_run"`
		NeedsContinue               bool   `json:"needs_continue"`
	}
	var rec receipt
	rsJSON(t, h, &rec, "answer", id, "--question-id", q.ID, "Yes, drop them.")
	if !rec.Saved || rec.Delivered || rec.NeedsContinue || runs.ValidID(rec.RevivedRun) != nil || rec.RevivedRun == id {
		t.Fatalf("answer to a dead child: %+v", rec)
	}
	nid := rec.RevivedRun
	answerPath := rsStore(h).AnswerPath(id, q.ID)
	nr := rsAwaitRun(t, h, nid, "revival completed", rsFinished(runs.StateCompleted))
	if nr.RevivedFrom != id || nr.AnswerFile != answerPath || nr.Agent != "janitor" || nr.Supervisor != q.Supervisor ||
		nr.ChildSession != "subagent-janitor-"+nid+"-1" {
		t.Fatalf("revived run %+v", nr)
	}
	out := rsOutput(h, nid)
	if !strings.Contains(out, "revived as "+nid+" with INTERCOM_ANSWER_FILE="+answerPath) ||
		!strings.Contains(out, `"message": "Yes, drop them."`) || !strings.Contains(out, "revived done") {
		t.Fatalf("revived child's output:\n%s", out)
	}
	if old := rsLoad(t, h, id); old.RevivedTo != nid || old.State != runs.StateFailed {
		t.Fatalf("old run after revival: %+v", old)
	}
	if st := rsQState(t, h, id, q.ID); st != runs.QAnswered {
		t.Fatalf("question after revival: %s", st)
	}
	if asks := rsPending(t, h, "sup"); len(asks) != 0 {
		t.Fatalf("the supervisor's ask is still pending: %v", asks)
	}
	saved, err := os.ReadFile(answerPath)
	if err != nil {
		t.Fatal(err)
	}

	// Identical again: nothing launched.
	rsJSON(t, h, &rec, "answer", id, "--question-id", q.ID, "Yes, drop them.")
	if rec.Saved || !rec.Identical || rec.RevivedRun != nid || rec.NeedsContinue {
		t.Fatalf("identical repeat: %+v", rec)
	}
	if n := rsRunCount(t, h); n != 2 {
		t.Fatalf("%d runs after the identical repeat, want 2", n)
	}
	// Conflicting: refused, the first kept.
	res := h.Runs("answer", id, "--question-id", q.ID, "No, keep them.")
	if res.Code != 1 || !strings.Contains(res.Stderr, "conflicting answer refused") || !strings.Contains(res.Stderr, "Yes, drop them.") {
		t.Fatalf("conflicting answer: exit %d\nstdout %q\nstderr %q", res.Code, res.Stdout, res.Stderr)
	}
	if now, _ := os.ReadFile(answerPath); !bytes.Equal(now, saved) {
		t.Fatalf("answer.json changed:\n%s", now)
	}
	if n := rsRunCount(t, h); n != 2 {
		t.Fatalf("%d runs after the conflicting answer, want 2", n)
	}
	if res := h.Runs("answer", id, "--question-id", "qnope", "x"); res.Code != 1 || !strings.Contains(res.Stderr, "has no question") {
		t.Fatalf("answer to an unknown question: exit %d, %q", res.Code, res.Stderr)
	}
	if res := h.Runs("answer", "nosuchrun", "--question-id", q.ID, "x"); res.Code != 1 || !strings.Contains(res.Stderr, "no run") {
		t.Fatalf("answer to an unknown run: exit %d, %q", res.Code, res.Stderr)
	}
}

// TestRunsContinueInterruptedRevival: an answer saved without a recorded
// revival (as if `agent-runs answer` died right after saving) is reported as
// needing `continue`; `continue` revives the run once; repeating it launches
// nothing more.
func TestRunsContinueInterruptedRevival(t *testing.T) {
	t.Parallel()
	h := rsH(t)
	sup, _ := h.Attach("--name", "sup")
	script := rsScript(t, h.Cwd, "child.sh", rsRevivableChild)
	id := rsStart(t, h, h.Cwd, "sup", "--agent", "janitor", "--", "/bin/sh", script)
	rsNextMessage(t, sup)
	q := rsAwaitQuestion(t, h, id)
	rsKillChild(t, h, id)
	// The interrupted answer: saved durably, nothing launched.
	if _, created, err := rsStore(h).SaveAnswer(id, q.ID, "Only the temp tables.", "agent-runs answer"); err != nil || !created {
		t.Fatalf("save answer: %v", err)
	}
	if res := h.Runs("status", id); res.Code != 0 || !strings.Contains(res.Stdout, "["+runs.QPending+"]") {
		t.Fatalf("status: %+v", res)
	}
	var rec struct {
		Identical     bool
		RevivedRun    string `json:"revived_run"`
		NeedsContinue bool   `json:"needs_continue"`
		Note          string `json:"note"`
	}
	rsJSON(t, h, &rec, "answer", id, "--question-id", q.ID, "Only the temp tables.")
	if !rec.Identical || rec.RevivedRun != "" || !rec.NeedsContinue || !strings.Contains(rec.Note, "agent-runs continue "+id) {
		t.Fatalf("answer after an interrupted revival: %+v", rec)
	}
	if n := rsRunCount(t, h); n != 1 {
		t.Fatalf("%d runs before continue, want 1", n)
	}
	var cont struct {
		RunID      string `json:"run_id"`
		RevivedRun string `json:"revived_run"`
	}
	rsJSON(t, h, &cont, "continue", id)
	if cont.RunID != id || runs.ValidID(cont.RevivedRun) != nil || cont.RevivedRun == id {
		t.Fatalf("continue: %+v", cont)
	}
	nr := rsAwaitRun(t, h, cont.RevivedRun, "revival completed", rsFinished(runs.StateCompleted))
	if nr.RevivedFrom != id || !strings.Contains(rsOutput(h, nr.ID), `"message": "Only the temp tables."`) {
		t.Fatalf("revival %+v, output %q", nr, rsOutput(h, nr.ID))
	}
	rsJSON(t, h, &cont, "continue", id)
	if cont.RevivedRun != nr.ID {
		t.Fatalf("second continue revived %s, want the same %s", cont.RevivedRun, nr.ID)
	}
	if n := rsRunCount(t, h); n != 2 {
		t.Fatalf("%d runs after two continues, want 2", n)
	}
	if after := rsLoad(t, h, nr.ID); after.StartedAt != nr.StartedAt || after.OwnerPid != nr.OwnerPid {
		t.Fatalf("the revival was started again: %+v", after)
	}
}

// rsSnapshot records every path under dir with its mode, size, mtime and
// content hash.
func rsSnapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		sum := ""
		if !d.IsDir() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum = fmt.Sprintf("%x", sha256.Sum256(data))
		}
		snap[p] = fmt.Sprintf("%v %d %d %s", fi.Mode(), fi.Size(), fi.ModTime().UnixNano(), sum)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// TestRunsQuestionsPaging: 45 saved questions (written with the runs store,
// as a child would) page 20/20/5 with next_offset 20, 40, null; unresolved
// (awaiting_input, answer_pending) come first, each group oldest first;
// previews stop at 2,048 characters while question_path keeps the whole
// text; --id, --index and --question-id narrow the list; limits are
// checked; and browsing changes no file.
func TestRunsQuestionsPaging(t *testing.T) {
	t.Parallel()
	h := rsH(t)
	st := rsStore(h)
	t0 := time.Now().UTC().Add(-time.Hour)
	runIDs := []string{"aaaa0001", "bbbb0002", "cccc0003"}
	for i, id := range runIDs {
		r := &runs.Run{ID: id, Agent: "worker", Index: i, Supervisor: "sup-id", SupervisorName: "sup", ChildSession: runs.ChildName("worker", id, i, true),
			ChildSessionID: "child-" + id, Cmd: "/bin/true", Cwd: h.Cwd, State: runs.StateRunning, CreatedAt: t0.Add(time.Duration(i) * time.Second)}
		if err := st.Create(r); err != nil {
			t.Fatal(err)
		}
	}
	long := strings.Repeat("0123456789", 500) // 5,000 chars
	states := map[string]string{}
	var all []string
	for i := range 45 {
		qid := fmt.Sprintf("q%02d", i)
		run := runIDs[i%3]
		msg := fmt.Sprintf("question %d", i)
		if i == 7 {
			msg = long
		}
		q := &runs.Question{ID: qid, RunID: run, Agent: "worker", Index: i % 3, Reason: runs.ReasonDecision, Message: msg,
			ChildSession: "child-" + run, Supervisor: "sup-id", CreatedAt: t0.Add(time.Duration(45-i) * time.Minute)}
		if err := st.SaveQuestion(q); err != nil {
			t.Fatal(err)
		}
		state := runs.QAwaiting
		switch {
		case i%5 == 0: // 9 answered
			if _, _, err := st.SaveAnswer(run, qid, "ok", "test"); err != nil {
				t.Fatal(err)
			}
			if err := st.MarkConsumed(run, qid); err != nil {
				t.Fatal(err)
			}
			state = runs.QAnswered
		case i%7 == 1: // 6 cancelled: 1, 8, 22, 29, 36, 43
			if _, err := st.UpdateQuestion(run, qid, func(q *runs.Question) error { q.State = runs.QCancelled; return nil }); err != nil {
				t.Fatal(err)
			}
			state = runs.QCancelled
		case i%11 == 3: // 3, 14, 25: answer saved, not consumed, still unresolved
			if _, _, err := st.SaveAnswer(run, qid, "pending", "test"); err != nil {
				t.Fatal(err)
			}
			state = runs.QPending
		}
		states[qid] = state
		all = append(all, qid)
	}
	// Expected order: unresolved first, then resolved; newest-created last
	// (question i was created at t0 + (45-i) minutes, so higher i is older).
	var unresolved, resolved []string
	for i := 44; i >= 0; i-- {
		qid := fmt.Sprintf("q%02d", i)
		if s := states[qid]; s == runs.QAwaiting || s == runs.QPending {
			unresolved = append(unresolved, qid)
		} else {
			resolved = append(resolved, qid)
		}
	}
	want := append(append([]string{}, unresolved...), resolved...)
	if len(unresolved) < 21 || len(resolved) < 6 || len(want) != 45 {
		t.Fatalf("fixture: %d unresolved, %d resolved", len(unresolved), len(resolved))
	}

	before := rsSnapshot(t, h.Layout.RunsDir())
	var got []string
	var next *int
	offset := 0
	for i, size := range []int{20, 20, 5} {
		args := []string{}
		if i > 0 {
			args = []string{"--offset", strconv.Itoa(offset)}
		}
		p := rsQuestions(t, h, args...)
		if p.Total != 45 || p.Offset != offset || len(p.Questions) != size {
			t.Fatalf("page %d: total %d offset %d size %d, want 45 %d %d", i+1, p.Total, p.Offset, len(p.Questions), offset, size)
		}
		next = p.NextOffset
		if i < 2 && (next == nil || *next != offset+20) {
			t.Fatalf("page %d next_offset %v, want %d", i+1, next, offset+20)
		}
		for _, q := range p.Questions {
			got = append(got, q.ID)
			if q.State != states[q.ID] {
				t.Fatalf("question %s state %q, want %q", q.ID, q.State, states[q.ID])
			}
			hasAnswer := states[q.ID] == runs.QAnswered || states[q.ID] == runs.QPending
			if (q.AnswerPath != "") != hasAnswer || q.QuestionPath != st.QuestionPath(q.RunID, q.ID) {
				t.Fatalf("question %s paths: %+v", q.ID, q)
			}
			if (q.AnswerCmd != "") != (q.State == runs.QAwaiting || q.State == runs.QPending) {
				t.Fatalf("question %s answer command %q in state %s", q.ID, q.AnswerCmd, q.State)
			}
			if n := utf8.RuneCountInString(q.Preview); n > 2048 {
				t.Fatalf("preview of %s has %d chars", q.ID, n)
			}
			if q.ID == "q07" {
				if n := utf8.RuneCountInString(q.Preview); n < 2000 || !strings.HasPrefix(long, strings.TrimSuffix(q.Preview, "…")) {
					t.Fatalf("preview of the 5,000-char question: %d chars, %q…", n, q.Preview[:20])
				}
				var full runs.Question
				data, _ := os.ReadFile(q.QuestionPath)
				if err := json.Unmarshal(data, &full); err != nil || full.Message != long {
					t.Fatalf("question_path does not hold the full question: %v", err)
				}
			}
		}
		if next != nil {
			offset = *next
		}
	}
	if next != nil {
		t.Fatalf("last page next_offset %d, want null", *next)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("paged order\n%v\nwant\n%v", got, want)
	}

	// Human output and narrowing.
	if out := rsOK(t, h, h.Cwd, "questions"); !strings.Contains(out, "(1-20 of 45; next page: --offset 20)") || !strings.Contains(out, "answer with: agent-runs answer") {
		t.Fatalf("human page:\n%s", out)
	}
	if p := rsQuestions(t, h, "--id", "bbbb0002", "--limit", "100"); p.Total != 15 || len(p.Questions) != 15 || p.NextOffset != nil || p.Questions[0].RunID != "bbbb0002" {
		t.Fatalf("--id: %+v", p)
	}
	if p := rsQuestions(t, h, "--index", "2", "--limit", "7"); p.Total != 15 || len(p.Questions) != 7 || p.NextOffset == nil || *p.NextOffset != 7 || p.Questions[6].Index != 2 {
		t.Fatalf("--index: total %d, %d rows, next %v", p.Total, len(p.Questions), p.NextOffset)
	}
	if p := rsQuestions(t, h, "--question-id", "q07"); p.Total != 1 || p.Questions[0].ID != "q07" {
		t.Fatalf("--question-id: %+v", p)
	}
	for _, bad := range [][]string{{"--limit", "0"}, {"--limit", "101"}} {
		if r := h.Runs(append([]string{"questions"}, bad...)...); r.Code != 2 {
			t.Fatalf("questions %v: exit %d, want 2 (%s)", bad, r.Code, r.Stderr)
		}
	}
	rsOK(t, h, h.Cwd, "status", "aaaa0001")
	rsOK(t, h, h.Cwd, "list", "--all")

	after := rsSnapshot(t, h.Layout.RunsDir())
	for p, v := range before {
		if after[p] != v {
			t.Errorf("browsing changed %s: %q → %q", p, v, after[p])
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("browsing created %s", p)
		}
	}
}

// TestRunsStopCancelsQuestionsAndKillsChild: a nudge reaches the live
// waiting child's session inbox (and does not answer its question); stop
// cancels the open question, clears the supervisor's pending ask and kills
// the child's whole process group; the run ends stopped; a nudge of the
// stopped run restarts nothing.
func TestRunsStopCancelsQuestionsAndKillsChild(t *testing.T) {
	t.Parallel()
	h := rsH(t)
	sup, sev := h.Attach("--name", "sup")
	script := rsScript(t, h.Cwd, "child.sh", `
intercom contact-supervisor --reason need_decision -m "Which branch?"
echo "contact exit $?"
`)
	id := rsStart(t, h, h.Cwd, "sup", "--agent", "worker", "--", "/bin/sh", script)
	rsNextMessage(t, sup)
	q := rsAwaitQuestion(t, h, id)
	r := rsLoad(t, h, id)

	var nudge struct {
		Nudged       bool   `json:"nudged"`
		MessageID    string `json:"message_id"`
		ChildSession string `json:"child_session"`
	}
	rsJSON(t, h, &nudge, "nudge", id, "Skip", "the", "flaky", "test.")
	if !nudge.Nudged || nudge.MessageID == "" || nudge.ChildSession != "subagent-worker-"+id {
		t.Fatalf("nudge: %+v", nudge)
	}
	rsJSON(t, h, &nudge, "nudge", id)
	var inbox struct {
		Messages []map[string]any `json:"messages"`
	}
	h.JSON(&inbox, "--session", r.ChildSessionID, "inbox")
	if len(inbox.Messages) != 2 || inbox.Messages[0]["text"] != "Skip the flaky test." || inbox.Messages[1]["text"] != runs.DefaultNudge ||
		inbox.Messages[0]["delivery"] != "steer" || rsSub(inbox.Messages[0], "from")["id"] != sev["id"] {
		t.Fatalf("child inbox: %v", inbox.Messages)
	}
	if st := rsQState(t, h, id, q.ID); st != runs.QAwaiting {
		t.Fatalf("a nudge changed the question to %s", st)
	}

	var stop struct {
		Run       runs.Run `json:"run"`
		Cancelled int      `json:"cancelled_questions"`
	}
	rsJSON(t, h, &stop, "stop", id, "--grace", "5s")
	if stop.Cancelled != 1 || stop.Run.State != runs.StateStopped {
		t.Fatalf("stop: %+v", stop)
	}
	if st := rsQState(t, h, id, q.ID); st != runs.QCancelled {
		t.Fatalf("question after stop: %s", st)
	}
	Eventually(t, rsWait, func() bool { return !rsGroupAlive(r.ChildPid) }, "the child's process group %d to die", r.ChildPid)
	final := rsAwaitRun(t, h, id, "stopped with an exit recorded", func(r *runs.Run) bool { return r.State == runs.StateStopped && r.ExitCode != nil })
	if strings.Contains(rsOutput(h, id), "contact exit 0") {
		t.Fatalf("the question was answered instead of cancelled:\n%s", rsOutput(h, id))
	}
	if asks := rsPending(t, h, "sup"); len(asks) != 0 {
		t.Fatalf("supervisor pending after stop: %v", asks)
	}
	if _, _, err := rsStore(h).SaveAnswer(id, q.ID, "late", "test"); err == nil {
		t.Fatal("a cancelled question took an answer")
	}
	if p := rsQuestions(t, h, "--id", id); p.Total != 1 || p.Questions[0].State != "cancelled" || p.Questions[0].AnswerCmd != "" {
		t.Fatalf("questions after stop: %+v", p)
	}

	// Nudging the stopped run reports its outcome and restarts nothing.
	runJSON, _ := os.ReadFile(filepath.Join(rsStore(h).RunDir(id), "run.json"))
	out := rsOK(t, h, h.Cwd, "nudge", id)
	if !strings.HasPrefix(out, "Not nudged, nothing restarted: run "+id+" (worker) stopped") {
		t.Fatalf("nudge of a stopped run printed %q", out)
	}
	if now, _ := os.ReadFile(filepath.Join(rsStore(h).RunDir(id), "run.json")); !bytes.Equal(now, runJSON) {
		t.Fatalf("nudge changed run.json:\n%s", now)
	}
	if n := rsRunCount(t, h); n != 1 || runs.Alive(final.ChildPid) {
		t.Fatalf("after nudging a stopped run: %d runs, child alive %t", n, runs.Alive(final.ChildPid))
	}
	h.JSON(&inbox, "--session", r.ChildSessionID, "inbox")
	if len(inbox.Messages) != 0 {
		t.Fatalf("a nudge of a stopped run was sent: %v", inbox.Messages)
	}
}

// TestRunsStopEscalatesToSIGKILL: a child that ignores SIGTERM is killed
// after --grace.
func TestRunsStopEscalatesToSIGKILL(t *testing.T) {
	t.Parallel()
	h := rsH(t)
	h.Attach("--name", "sup")
	script := rsScript(t, h.Cwd, "child.sh", `
trap '' TERM
echo "ignoring TERM"
while :; do sleep 0.1; done
`)
	id := rsStart(t, h, h.Cwd, "sup", "--agent", "stubborn", "--", "/bin/sh", script)
	rsAwaitOutput(t, h, id, "ignoring TERM", rsWait)
	r := rsAwaitRun(t, h, id, "running", rsFinished(runs.StateRunning))
	start := time.Now()
	out := rsOK(t, h, h.Cwd, "stop", id, "--grace", "700ms")
	if el := time.Since(start); el < 700*time.Millisecond {
		t.Fatalf("stop returned after %s, before the grace period", el)
	}
	if !strings.Contains(out, "Stopped: run "+id+" (stubborn) stopped") || !strings.Contains(out, "0 question(s) cancelled") {
		t.Fatalf("stop printed %q", out)
	}
	Eventually(t, rsWait, func() bool { return !rsGroupAlive(r.ChildPid) }, "the child's process group to die")
	final := rsAwaitRun(t, h, id, "stopped", func(r *runs.Run) bool { return r.State == runs.StateStopped && r.ExitCode != nil })
	if *final.ExitCode == 0 {
		t.Fatalf("killed child recorded exit 0: %+v", final)
	}
}

// rsRunEnv runs intercom with extra environment.
func rsRunEnv(t *testing.T, h *H, env []string, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), rsWait)
	defer cancel()
	c := h.cmd(ctx, "intercom", args...)
	c.Env = append(c.Env, env...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	code := 0
	if err != nil {
		code = c.ProcessState.ExitCode()
	}
	return Result{out.String(), errb.String(), code}
}

// TestSupervisorContactOutsideChild: outside a supervised run (any of the
// four variables missing) contact-supervisor exits 2 naming the variables,
// before contacting a broker or saving anything.
func TestSupervisorContactOutsideChild(t *testing.T) {
	t.Parallel()
	h := rsH(t)
	clear := []string{"INTERCOM_SUPERVISOR=", "INTERCOM_RUN_ID=", "INTERCOM_CHILD_AGENT=", "INTERCOM_CHILD_INDEX=",
		"PI_SUBAGENT_ORCHESTRATOR_TARGET=", "PI_SUBAGENT_RUN_ID=", "PI_SUBAGENT_CHILD_AGENT=", "PI_SUBAGENT_CHILD_INDEX="}
	full := []string{"INTERCOM_SUPERVISOR=sup", "INTERCOM_RUN_ID=abcd1234", "INTERCOM_CHILD_AGENT=worker", "INTERCOM_CHILD_INDEX=0"}
	cases := [][]string{clear}
	for i := range full {
		env := append([]string{}, clear...)
		for j, kv := range full {
			if j != i {
				env = append(env, kv)
			}
		}
		cases = append(cases, env)
	}
	for i, env := range cases {
		reason := "need_decision"
		if i == 0 {
			reason = "progress_update" // the non-blocking reason is refused too
		}
		r := rsRunEnv(t, h, env, "contact-supervisor", "--reason", reason, "-m", "hello?")
		if r.Code != 2 {
			t.Fatalf("contact-supervisor with %v: exit %d, want 2\nstderr %s", env, r.Code, r.Stderr)
		}
		for _, v := range []string{"INTERCOM_SUPERVISOR", "INTERCOM_RUN_ID", "INTERCOM_CHILD_AGENT", "INTERCOM_CHILD_INDEX", "agent-runs start"} {
			if !strings.Contains(r.Stderr, v) {
				t.Fatalf("error %q does not name %s", r.Stderr, v)
			}
		}
	}
	bad := append(append([]string{}, clear...), "INTERCOM_SUPERVISOR=sup", "INTERCOM_RUN_ID=abcd1234", "INTERCOM_CHILD_AGENT=w", "INTERCOM_CHILD_INDEX=first")
	if r := rsRunEnv(t, h, bad, "contact-supervisor", "--reason", "need_decision", "-m", "x"); r.Code != 2 || !strings.Contains(r.Stderr, "INTERCOM_CHILD_INDEX") {
		t.Fatalf("non-numeric index: exit %d, %q", r.Code, r.Stderr)
	}
	bad = append(append([]string{}, clear...), "INTERCOM_SUPERVISOR=sup", "INTERCOM_RUN_ID=../etc", "INTERCOM_CHILD_AGENT=w", "INTERCOM_CHILD_INDEX=0")
	if r := rsRunEnv(t, h, bad, "contact-supervisor", "--reason", "need_decision", "-m", "x"); r.Code != 2 || !strings.Contains(r.Stderr, "INTERCOM_RUN_ID") {
		t.Fatalf("invalid run id: exit %d, %q", r.Code, r.Stderr)
	}
	if pids := h.BrokerPids(); len(pids) != 0 {
		t.Fatalf("a refused contact-supervisor started broker %v", pids)
	}
	if _, err := os.Stat(h.Layout.RunsDir()); !os.IsNotExist(err) {
		t.Fatalf("a refused contact-supervisor created %s (%v)", h.Layout.RunsDir(), err)
	}
}

// TestRunsStartWaitAndCompletionNotice: --wait prints the result and exits
// 0 for a completed child and 1 for a failed one, without a notice to the
// supervisor; the child gets the supervision variables and its own session;
// --output redirects the output; a nudge of the completed run restarts and
// changes nothing; without --wait the run id is printed at
// once while the child still runs and the supervisor later gets a steer
// "Subagent run finished." notice with the result and paths.
func TestRunsStartWaitAndCompletionNotice(t *testing.T) {
	t.Parallel()
	h := rsH(t)
	sup, sev := h.Attach("--name", "sup")
	supID := rsStr(sev["id"])
	ok := rsScript(t, h.Cwd, "ok.sh", `
for v in INTERCOM_SUPERVISOR INTERCOM_RUN_ID INTERCOM_CHILD_AGENT INTERCOM_CHILD_INDEX INTERCOM_SESSION INTERCOM_CHILD_SESSION \
  PI_SUBAGENT_ORCHESTRATOR_TARGET PI_SUBAGENT_RUN_ID PI_SUBAGENT_CHILD_AGENT PI_SUBAGENT_CHILD_INDEX; do
  eval "echo $v=\${$v:-}"
done
echo "cwd=$(pwd)"
echo "all good"
`)
	outFile := filepath.Join(t.TempDir(), "builder-output.txt")
	res := h.Runs("--supervisor", "sup", "start", "--wait", "--agent", "builder", "--index", "0", "--output", outFile, "--", "/bin/sh", ok)
	if res.Code != 0 || !strings.Contains(res.Stdout, "(builder) completed, exit code 0; output: "+outFile) || !strings.Contains(res.Stdout, "all good") {
		t.Fatalf("start --wait of a good child: exit %d\n%s\n%s", res.Code, res.Stdout, res.Stderr)
	}
	id := strings.Fields(res.Stdout)[1]
	r := rsLoad(t, h, id)
	data, _ := os.ReadFile(outFile)
	for _, kv := range []string{"INTERCOM_SUPERVISOR=" + supID, "INTERCOM_RUN_ID=" + id, "INTERCOM_CHILD_AGENT=builder", "INTERCOM_CHILD_INDEX=0",
		"INTERCOM_SESSION=" + r.ChildSessionID, "INTERCOM_CHILD_SESSION=subagent-builder-" + id + "-1", "PI_SUBAGENT_ORCHESTRATOR_TARGET=" + supID,
		"PI_SUBAGENT_RUN_ID=" + id, "PI_SUBAGENT_CHILD_AGENT=builder", "PI_SUBAGENT_CHILD_INDEX=0", "cwd=" + h.Cwd, "all good"} {
		if !strings.Contains(string(data), kv+"\n") {
			t.Fatalf("--output file lacks %q:\n%s", kv, data)
		}
	}
	if r.State != runs.StateCompleted || r.OutputPath != outFile || !r.Wait || r.Cwd != h.Cwd || r.Supervisor != supID {
		t.Fatalf("run record %+v", r)
	}
	if row := Row(h.Sessions("--scope", "all", "--all"), "subagent-builder-"+id+"-1"); row == nil || row["id"] != r.ChildSessionID {
		t.Fatalf("the child's session is not known: %v", row)
	}
	// Nudging the completed run reports its outcome and changes nothing.
	before := rsSnapshot(t, rsStore(h).RunDir(id))
	var fin struct {
		Nudged  bool     `json:"nudged"`
		Outcome string   `json:"outcome"`
		Run     runs.Run `json:"run"`
	}
	rsJSON(t, h, &fin, "nudge", id)
	if fin.Nudged || fin.Run.ID != id || !strings.Contains(fin.Outcome, "run "+id+" (builder) completed, exit code 0") {
		t.Fatalf("nudge of a completed run: %+v", fin)
	}
	if after := rsSnapshot(t, rsStore(h).RunDir(id)); !reflect.DeepEqual(after, before) || rsRunCount(t, h) != 1 {
		t.Fatalf("nudge of a completed run changed its files or started a run:\n%v\n%v", before, after)
	}

	fail := rsScript(t, h.Cwd, "fail.sh", "echo 'it broke'\nexit 3\n")
	res = h.Runs("--supervisor", "sup", "start", "--wait", "--agent", "breaker", "--", "/bin/sh", fail)
	if res.Code != 1 || !strings.Contains(res.Stdout, "(breaker) failed, exit code 3") || !strings.Contains(res.Stdout, "it broke") {
		t.Fatalf("start --wait of a failing child: exit %d\n%s\n%s", res.Code, res.Stdout, res.Stderr)
	}

	// Without --wait: the id at once, the notice later.
	gate := filepath.Join(h.Cwd, "gate")
	slow := rsScript(t, h.Cwd, "slow.sh", `
echo "waiting for the gate"
while [ ! -e "$1" ]; do sleep 0.05; done
echo "passed the gate"
`)
	res = h.Runs("--supervisor", "sup", "start", "--agent", "slowpoke", "--", "/bin/sh", slow, gate)
	if res.Code != 0 || !regexp.MustCompile(`^[0-9a-f]{8}\n$`).MatchString(res.Stdout) {
		t.Fatalf("start without --wait: exit %d, %q, %q", res.Code, res.Stdout, res.Stderr)
	}
	sid := strings.TrimSpace(res.Stdout)
	rsAwaitOutput(t, h, sid, "waiting for the gate", rsWait)
	if r := rsLoad(t, h, sid); r.State != runs.StateRunning || !runs.Alive(r.ChildPid) || r.Wait {
		t.Fatalf("run after start returned: %+v", r)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// The first message the supervisor ever gets is this notice: the --wait
	// runs sent none.
	m := rsNextMessage(t, sup)
	text := rsStr(m["text"])
	sr := rsLoad(t, h, sid)
	for _, s := range []string{"Subagent run finished.\nRun: " + sid + "\nAgent: slowpoke\nChild index: 0\nState: completed\nExit code: 0\n",
		"Result: " + sr.OutputPath, "Run record: " + filepath.Join(rsStore(h).RunDir(sid), "run.json"), "passed the gate"} {
		if !strings.Contains(text, s) {
			t.Fatalf("completion notice lacks %q: %v", s, m)
		}
	}
	if m["delivery"] != "steer" || rsSub(m, "from")["id"] != sr.ChildSessionID || m["expects_reply"] == true {
		t.Fatalf("completion notice %v", m)
	}
	if sr.State != runs.StateCompleted {
		t.Fatalf("run after the notice: %+v", sr)
	}
}

// TestRunsListAcrossWorkingDirectories: list shows this supervisor's runs
// started from different directories (and only its own), from any
// directory; --all shows every run; status shows one.
func TestRunsListAcrossWorkingDirectories(t *testing.T) {
	t.Parallel()
	h := rsH(t)
	_, sev := h.Attach("--name", "sup")
	h.Attach("--name", "other")
	d1, d2, d3 := t.TempDir(), t.TempDir(), t.TempDir()
	script := rsScript(t, h.Cwd, "pwd.sh", "pwd\n")
	var ids []string
	for _, d := range []string{d1, d2} {
		out := rsOK(t, h, d, "--supervisor", "sup", "start", "--wait", "--agent", "lister", "--", "/bin/sh", script)
		ids = append(ids, strings.Fields(out)[1])
	}
	out := rsOK(t, h, d3, "--supervisor", "other", "start", "--wait", "--agent", "lister", "--", "/bin/sh", script)
	otherID := strings.Fields(out)[1]

	type row struct {
		ID            string `json:"id"`
		Cwd           string `json:"cwd"`
		State         string `json:"state"`
		Supervisor    string `json:"supervisor"`
		OpenQuestions int    `json:"open_questions"`
		Env           []string
	}
	var list struct {
		Runs []row `json:"runs"`
	}
	// By the supervisor's id here, by its name below; from a third directory.
	out = rsOK(t, h, d3, "--json", "--supervisor", rsStr(sev["id"]), "list")
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Runs) != 2 {
		t.Fatalf("list from a third directory: %+v", list.Runs)
	}
	cwds := map[string]string{}
	for _, r := range list.Runs {
		cwds[r.ID] = r.Cwd
		if r.State != runs.StateCompleted || r.Supervisor != rsStr(sev["id"]) || r.Env != nil {
			t.Fatalf("row %+v", r)
		}
	}
	if cwds[ids[0]] != d1 || cwds[ids[1]] != d2 {
		t.Fatalf("runs by cwd %v, want %s in %s and %s in %s", cwds, ids[0], d1, ids[1], d2)
	}
	human := rsOK(t, h, h.Cwd, "--supervisor", "sup", "list")
	if !strings.Contains(human, ids[0]) || !strings.Contains(human, ids[1]) || strings.Contains(human, otherID) || !strings.Contains(human, d2) {
		t.Fatalf("human list:\n%s", human)
	}
	rsJSON(t, h, &list, "list", "--all")
	if len(list.Runs) != 3 {
		t.Fatalf("list --all: %+v", list.Runs)
	}
	var status struct {
		Run struct {
			ID  string `json:"id"`
			Cwd string `json:"cwd"`
		} `json:"run"`
	}
	rsJSON(t, h, &status, "status", ids[1])
	if status.Run.ID != ids[1] || status.Run.Cwd != d2 {
		t.Fatalf("status: %+v", status)
	}
	if out := rsOutput(h, ids[1]); strings.TrimSpace(out) != d2 {
		t.Fatalf("child of %s ran in %q", d2, out)
	}
}

// TestUIAnswerAnswersRealRuns: the function `intercom ui` answers a run's
// question with from its runs view (ui.DeskAnswer over runs.Desk, the code
// of `agent-runs answer`) hands the answer to a waiting child, refuses a
// second, different answer, and revives a child that died waiting (its
// owner started through agent-runs found on PATH).
func TestUIAnswerAnswersRealRuns(t *testing.T) {
	h := rsH(t)
	t.Setenv("PATH", binDir+string(os.PathListSeparator)+os.Getenv("PATH")) // the revival's owner is agent-runs, found on PATH
	sup, _ := h.Attach("--name", "sup")
	ctx, cancel := context.WithTimeout(context.Background(), rsWait)
	defer cancel()
	store := rsStore(h)
	answer := ui.DeskAnswer(runs.Desk{Files: store, Launch: runs.OwnerLauncher("", h.Home, store),
		Connect: func() (*intercom.Client, error) { return intercom.Connect(ctx, intercom.Options{Home: h.Home}) }})

	script := rsScript(t, h.Cwd, "child.sh", `
r=$(intercom contact-supervisor --reason need_decision -m "Ship it?"); echo "got: $r (exit $?)"
`)
	id := rsStart(t, h, h.Cwd, "sup", "--agent", "worker", "--", "/bin/sh", script)
	rsNextMessage(t, sup)
	q := rsAwaitQuestion(t, h, id)
	note, err := answer(ctx, id, q.ID, "yes, ship it")
	// The child polls its answer file too: it may read the saved answer
	// before the desk has connected to deliver it.
	if err != nil || (note != "answer saved and delivered to the waiting child" && note != "answer saved and read by the waiting child") {
		t.Fatalf("answer to a waiting child: note %q, err %v", note, err)
	}
	rsAwaitOutput(t, h, id, "got: Reply from supervisor: yes, ship it (exit 0)", rsWait)
	if st := rsQState(t, h, id, q.ID); st != runs.QAnswered {
		t.Fatalf("question state after the UI's answer: %s", st)
	}
	if _, err := answer(ctx, id, q.ID, "no, wait"); err == nil || !strings.Contains(err.Error(), "conflicting answer refused") {
		t.Fatalf("a second, different answer: %v, want it refused", err)
	}

	dying := rsScript(t, h.Cwd, "dying.sh", rsRevivableChild)
	did := rsStart(t, h, h.Cwd, "sup", "--agent", "janitor", "--index", "0", "--", "/bin/sh", dying)
	rsNextMessage(t, sup)
	dq := rsAwaitQuestion(t, h, did)
	rsKillChild(t, h, did)
	note, err = answer(ctx, did, dq.ID, "Yes, drop them.")
	if err != nil || !strings.HasPrefix(note, "answer saved; the child had exited and was revived as run ") {
		t.Fatalf("answer to a dead child: note %q, err %v", note, err)
	}
	nid := strings.TrimPrefix(note, "answer saved; the child had exited and was revived as run ")
	rsAwaitRun(t, h, nid, "revival completed", rsFinished(runs.StateCompleted))
	if out := rsOutput(h, nid); !strings.Contains(out, `"message": "Yes, drop them."`) || !strings.Contains(out, "revived done") {
		t.Fatalf("revived child's output:\n%s", out)
	}
}
