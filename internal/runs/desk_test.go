package runs

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/internal/brokertest"
	"github.com/intercom-dev/intercom/internal/detach"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// supervised is a run in a real store whose child session asked its
// supervisor one question, on a real in-process broker.
type supervised struct {
	home     string
	c        *intercom.Client
	st       Files
	run      *Run
	q        *Question
	launched []string // runs whose owner the desk started
}

func newSupervised(t *testing.T, state string, childPid int) *supervised {
	t.Helper()
	ctx := t.Context()
	s := &supervised{home: brokertest.Start(t)}
	s.c = brokertest.Connect(t, s.home)
	s.st = Open(s.home)
	sup, err := s.c.Attach(ctx, intercom.AttachOptions{Name: "sup", NoDeliver: true})
	if err != nil {
		t.Fatal(err)
	}
	id := NewID()
	child, err := s.c.Attach(ctx, intercom.AttachOptions{Name: ChildName("worker", id, 0, true), RequestID: "child-" + id, NoDeliver: true})
	if err != nil {
		t.Fatal(err)
	}
	s.run = &Run{ID: id, Agent: "worker", Supervisor: sup.ID(), SupervisorName: "sup", ChildSession: ChildName("worker", id, 0, true),
		ChildSessionID: child.ID(), Cmd: "/bin/true", State: state, ChildPid: childPid, CreatedAt: time.Now().UTC()}
	if err := s.st.Create(s.run); err != nil {
		t.Fatal(err)
	}
	s.q = &Question{ID: NewQuestionID(), RunID: id, Agent: "worker", Reason: ReasonDecision, Message: "ship it?", ChildSession: child.ID(), Supervisor: sup.ID()}
	if err := s.st.SaveQuestion(s.q); err != nil {
		t.Fatal(err)
	}
	res, err := s.c.Send(ctx, wire.SendRequest{From: child.ID(), To: sup.ID(), Text: "ship it?", Delivery: wire.DeliverySteer, DeliverySet: true, ExpectsReply: true, TimeoutMs: time.Hour.Milliseconds()})
	if err != nil {
		t.Fatal(err)
	}
	s.q.AskID = res.ID
	if _, err := s.st.UpdateQuestion(id, s.q.ID, func(q *Question) error { q.AskID = res.ID; return nil }); err != nil {
		t.Fatal(err)
	}
	return s
}

// desk answers for s; its launcher starts a real detached process that
// exits at once, and records the run it was started for.
func (s *supervised) desk(t *testing.T) Desk {
	t.Helper()
	trueBin, err := exec.LookPath("true")
	if err != nil {
		t.Fatal(err)
	}
	return Desk{Files: s.st,
		Connect: func() (*intercom.Client, error) {
			return intercom.Connect(t.Context(), intercom.Options{Home: s.home, NoSpawn: true})
		},
		Launch: func(id string) (*detach.Child, error) {
			s.launched = append(s.launched, id)
			return detach.Start(detach.Spec{Path: trueBin, Dir: "/"})
		}}
}

func TestDeskAnswerDeliversToTheWaitingChildOnce(t *testing.T) {
	s := newSupervised(t, StateRunning, os.Getpid()) // a live child: this process
	d := s.desk(t)
	rec, err := d.Answer(t.Context(), s.run.ID, s.q.ID, "yes, ship it")
	if err != nil || !rec.Saved || !rec.Delivered || rec.RevivedRun != "" || rec.Note != "answer saved and delivered to the waiting child" {
		t.Fatalf("Answer = %+v, %v", rec, err)
	}
	if rec.AnswerPath != s.st.AnswerPath(s.run.ID, s.q.ID) {
		t.Errorf("answer path %s, want %s", rec.AnswerPath, s.st.AnswerPath(s.run.ID, s.q.ID))
	}
	msgs, err := s.c.Peek(t.Context(), s.run.ChildSessionID, 0)
	if err != nil || len(msgs) != 1 || msgs[0].ReplyTo != s.q.AskID || msgs[0].Text != "yes, ship it" || msgs[0].From.ID != s.run.Supervisor {
		t.Fatalf("child's inbox %+v (%v), want the supervisor's reply to its ask", msgs, err)
	}
	if asks, err := s.c.Pending(t.Context(), s.run.Supervisor); err != nil || len(asks) != 0 {
		t.Errorf("supervisor's pending asks %+v (%v), want the reply to have resolved it", asks, err)
	}
	// The same answer again is identical and delivers nothing new; another
	// one is refused; neither launches anything.
	rec, err = d.Answer(t.Context(), s.run.ID, s.q.ID, "yes, ship it")
	if err != nil || rec.Saved || !rec.Identical {
		t.Fatalf("identical answer = %+v, %v", rec, err)
	}
	if msgs, _ := s.c.Peek(t.Context(), s.run.ChildSessionID, 0); len(msgs) != 1 {
		t.Errorf("child's inbox after the identical answer: %d messages, want 1", len(msgs))
	}
	if rec, err := d.Answer(t.Context(), s.run.ID, s.q.ID, "no, wait"); rec != nil || err == nil || !strings.Contains(err.Error(), "conflicting answer refused") {
		t.Fatalf("different answer = %+v, %v; want it refused with no receipt", rec, err)
	}
	if len(s.launched) != 0 {
		t.Errorf("launched %v for a live child", s.launched)
	}
}

func TestDeskAnswerRevivesAnExitedChildOnce(t *testing.T) {
	s := newSupervised(t, StateFailed, 0)
	d := s.desk(t)
	rec, err := d.Answer(t.Context(), s.run.ID, s.q.ID, "drop them")
	if err != nil || !rec.Saved || rec.Delivered || rec.NeedsContinue || ValidID(rec.RevivedRun) != nil {
		t.Fatalf("Answer = %+v, %v", rec, err)
	}
	nr, err := s.st.Load(rec.RevivedRun)
	if err != nil {
		t.Fatal(err)
	}
	if nr.RevivedFrom != s.run.ID || nr.AnswerFile != rec.AnswerPath || nr.Agent != "worker" || nr.Supervisor != s.run.Supervisor ||
		nr.ChildSession != "subagent-worker-"+nr.ID+"-1" || nr.ChildSessionID != "child-"+nr.ID || nr.State != StateStarting {
		t.Fatalf("revived run %+v", nr)
	}
	if old, _ := s.st.Load(s.run.ID); old.RevivedTo != nr.ID {
		t.Errorf("old run revived to %q, want %q", old.RevivedTo, nr.ID)
	}
	if q, _ := s.st.LoadQuestion(s.run.ID, s.q.ID); q.State != QAnswered {
		t.Errorf("question %s after the revival, want %s", q.State, QAnswered)
	}
	if len(s.launched) != 1 || s.launched[0] != nr.ID {
		t.Fatalf("launched %v, want the revival %s once", s.launched, nr.ID)
	}
	if asks, err := s.c.Pending(t.Context(), s.run.Supervisor); err != nil || len(asks) != 0 {
		t.Errorf("supervisor's pending asks %+v (%v), want the ask withdrawn", asks, err)
	}
	rec, err = d.Answer(t.Context(), s.run.ID, s.q.ID, "drop them")
	if err != nil || rec.RevivedRun != nr.ID || !strings.Contains(rec.Note, "nothing launched") || len(s.launched) != 1 {
		t.Fatalf("the answer again = %+v, %v (launched %v), want nothing launched", rec, err, s.launched)
	}
}

func TestDeskContinueFinishesAnInterruptedRevival(t *testing.T) {
	s := newSupervised(t, StateFailed, 0)
	d := s.desk(t)
	if _, err := d.Continue(s.run.ID); err == nil || !strings.Contains(err.Error(), "no saved, unconsumed answer") {
		t.Fatalf("Continue with no answer: %v", err)
	}
	// The answer was saved, then the answering process died before it
	// recorded a revival.
	if _, _, err := s.st.SaveAnswer(s.run.ID, s.q.ID, "go on", "agent-runs answer"); err != nil {
		t.Fatal(err)
	}
	rec, err := d.Answer(t.Context(), s.run.ID, s.q.ID, "go on")
	if err != nil || !rec.NeedsContinue || !strings.Contains(rec.Note, "agent-runs continue "+s.run.ID) || len(s.launched) != 0 {
		t.Fatalf("Answer after an interrupted one = %+v, %v, want needs_continue and nothing launched", rec, err)
	}
	nr, err := d.Continue(s.run.ID)
	if err != nil || nr.RevivedFrom != s.run.ID || len(s.launched) != 1 || s.launched[0] != nr.ID {
		t.Fatalf("Continue = %+v, %v (launched %v)", nr, err, s.launched)
	}
	if _, err := d.Continue("nosuchrun"); err == nil || err.Error() != `no run "nosuchrun" (see `+"`agent-runs list --all`"+`)` {
		t.Errorf("Continue of an unknown run: %v", err)
	}
	live := newSupervised(t, StateRunning, os.Getpid())
	if _, err := live.desk(t).Continue(live.run.ID); err == nil || !strings.Contains(err.Error(), "still running") {
		t.Errorf("Continue of a live run: %v", err)
	}
}

func TestDeskAnswerWithoutABrokerKeepsTheAnswer(t *testing.T) {
	s := newSupervised(t, StateRunning, os.Getpid())
	d := s.desk(t)
	down := errors.New("broker unreachable: test")
	d.Connect = func() (*intercom.Client, error) { return nil, down }
	rec, err := d.Answer(context.Background(), s.run.ID, s.q.ID, "later")
	if !errors.Is(err, down) || rec == nil || !rec.Saved || rec.Delivered || !strings.Contains(rec.Note, "broker unreachable") {
		t.Fatalf("Answer without a broker = %+v, %v", rec, err)
	}
	if a, err := s.st.LoadAnswer(s.run.ID, s.q.ID); err != nil || a.Message != "later" {
		t.Fatalf("saved answer %+v (%v)", a, err)
	}
	if rec, err := d.Answer(t.Context(), s.run.ID, "q-none", "x"); rec != nil || err == nil || !strings.Contains(err.Error(), "has no question") {
		t.Errorf("Answer to an unknown question = %+v, %v", rec, err)
	}
}

func TestDeskRevivalThatFailsToLaunchIsContinuedOnce(t *testing.T) {
	s := newSupervised(t, StateFailed, 0)
	d := s.desk(t)
	launch := d.Launch
	d.Launch = func(string) (*detach.Child, error) { return nil, errors.New("no agent-runs here") }
	rec, err := d.Answer(t.Context(), s.run.ID, s.q.ID, "retry it")
	if err == nil || rec == nil || !rec.NeedsContinue || !strings.Contains(rec.Note, "revival failed: no agent-runs here; retry with: agent-runs continue "+s.run.ID) {
		t.Fatalf("Answer with a failing launcher = %+v, %v", rec, err)
	}
	old, _ := s.st.Load(s.run.ID)
	if old.RevivedTo == "" {
		t.Fatal("the revival was not recorded before the launch")
	}
	// continue finishes the recorded revival: the same new run, launched once.
	d.Launch = launch
	nr, err := d.Continue(s.run.ID)
	if err != nil || nr.ID != old.RevivedTo || len(s.launched) != 1 {
		t.Fatalf("Continue = %+v, %v (launched %v), want run %s launched once", nr, err, s.launched, old.RevivedTo)
	}
	// Once its owner has recorded the launch, nothing is launched again.
	if _, err := s.st.Update(nr.ID, func(r *Run) error { r.State = StateRunning; return nil }); err != nil {
		t.Fatal(err)
	}
	if again, err := d.Continue(s.run.ID); err != nil || again.ID != nr.ID || len(s.launched) != 1 {
		t.Fatalf("Continue after the launch = %+v, %v (launched %v)", again, err, s.launched)
	}
}

func TestStoreWritesFailCleanlyWhereNoDirectoryCanBe(t *testing.T) {
	file := t.TempDir() + "/not-a-dir"
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	st := Files{Dir: file + "/runs"}
	r := &Run{ID: NewID(), Agent: "a", State: StateStarting}
	if err := st.Create(r); err == nil {
		t.Fatal("Create under a file succeeded")
	}
	if err := st.SaveQuestion(&Question{ID: NewQuestionID(), RunID: r.ID}); err == nil {
		t.Fatal("SaveQuestion under a file succeeded")
	}
	if _, err := st.Lookup(r.ID); err == nil || strings.Contains(err.Error(), "no run") {
		t.Fatalf("Lookup under a file: %v, want the read error (not a missing run)", err)
	}
}

// The child reads the saved answer from its file and ends while the desk is
// still connecting (a broker restarting): the desk decides on the run as it
// is then, and revives nothing.
func TestDeskAnswerConsumedWhileConnectingRevivesNothing(t *testing.T) {
	s := newSupervised(t, StateRunning, os.Getpid())
	d := s.desk(t)
	connect := d.Connect
	d.Connect = func() (*intercom.Client, error) {
		if err := s.st.MarkConsumed(s.run.ID, s.q.ID); err != nil {
			return nil, err
		}
		if _, err := s.st.Update(s.run.ID, func(r *Run) error { r.State, r.ChildPid = StateCompleted, 0; return nil }); err != nil {
			return nil, err
		}
		return connect()
	}
	rec, err := d.Answer(t.Context(), s.run.ID, s.q.ID, "yes")
	if err != nil || !rec.Saved || rec.RevivedRun != "" || rec.NeedsContinue || rec.Note != "answer saved and read by the waiting child" {
		t.Fatalf("Answer = %+v, %v; want the answer saved and nothing launched", rec, err)
	}
	if len(s.launched) != 0 {
		t.Errorf("launched %v for a child that had consumed its answer", s.launched)
	}
	if r, _ := s.st.Load(s.run.ID); r.RevivedTo != "" {
		t.Errorf("run revived to %q", r.RevivedTo)
	}
}
