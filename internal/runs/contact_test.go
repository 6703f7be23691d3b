package runs

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/internal/brokertest"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// child is a supervised child's Contact on a real in-process broker, with
// its supervisor's session.
type child struct {
	home string
	sup  *intercom.Session
	sc   *intercom.Client // the supervisor's client
	ct   *Contact
}

func newChild(t *testing.T) *child {
	t.Helper()
	ch := &child{home: brokertest.Start(t)}
	ch.sc = brokertest.Connect(t, ch.home)
	var err error
	if ch.sup, err = ch.sc.Attach(t.Context(), intercom.AttachOptions{Name: "planner", NoDeliver: true}); err != nil {
		t.Fatal(err)
	}
	connect := func() (*intercom.Client, error) {
		return intercom.Connect(t.Context(), intercom.Options{Home: ch.home, NoSpawn: true})
	}
	run := NewID()
	if ch.ct, err = Reach(t.Context(), connect, Child{Supervisor: "planner", RunID: run, Agent: "worker", Index: 1}, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ch.ct.Close)
	if ch.ct.Self != "child-"+run || ch.ct.SelfName != "subagent-worker-"+run+"-2" || ch.ct.Supervisor.ID != ch.sup.ID() {
		t.Fatalf("reached as %s (%s), supervisor %s; want child-%s, subagent-worker-%s-2, %s", ch.ct.Self, ch.ct.SelfName, ch.ct.Supervisor.ID, run, run, ch.sup.ID())
	}
	return ch
}

// asked starts ct.Ask in the background and returns, once the question is
// saved and pending at the supervisor, the question and the ask's result.
func (ch *child) asked(t *testing.T, ctx context.Context, iv *Interview) (*Question, <-chan error, *Reply) {
	t.Helper()
	var reply Reply
	done := make(chan error, 1)
	go func() {
		var err error
		reply, err = ch.ct.Ask(ctx, ReasonDecision, "which API?", iv, slog.New(slog.DiscardHandler))
		done <- err
	}()
	st := Open(ch.home)
	deadline := time.Now().Add(30 * time.Second)
	for {
		qs, _ := st.Questions(ch.ct.Child.RunID)
		asks, _ := ch.sc.Pending(t.Context(), ch.sup.ID())
		for _, q := range qs {
			for _, a := range asks {
				if q.State == QAwaiting && q.AskID != "" && a.AskID == q.AskID {
					return q, done, &reply
				}
			}
		}
		select {
		case err := <-done:
			t.Fatalf("Ask ended before it was pending: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("question not saved and pending: %d questions, %d asks pending", len(qs), len(asks))
		}
	}
}

// ended is the error Ask ended with (it must end within a minute).
func ended(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatal("Ask did not end")
		return nil
	}
}

func TestContactProgressSteersTheSupervisor(t *testing.T) {
	ch := newChild(t)
	res, err := ch.ct.Progress(t.Context(), "found the bug")
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := ch.sc.Peek(t.Context(), ch.sup.ID(), 0)
	if err != nil || len(msgs) != 1 || msgs[0].ID != res.ID || msgs[0].Delivery != wire.DeliverySteer ||
		!strings.HasPrefix(msgs[0].Text, "Subagent progress update.\nRun: "+ch.ct.Child.RunID) || !strings.HasSuffix(msgs[0].Text, "found the bug") {
		t.Fatalf("supervisor's inbox %+v (%v)", msgs, err)
	}
}

func TestContactAskEndsWithTheSupervisorsReply(t *testing.T) {
	ch := newChild(t)
	q, done, reply := ch.asked(t, t.Context(), nil)
	if _, err := ch.sc.Send(t.Context(), wire.SendRequest{From: ch.sup.ID(), To: ch.ct.Self, Text: "the stable one", ReplyTo: q.AskID}); err != nil {
		t.Fatal(err)
	}
	if err := ended(t, done); err != nil {
		t.Fatalf("Ask: %v", err)
	}
	if reply.Text != "the stable one" || reply.Question.ID != q.ID || reply.Structured != nil || reply.StructuredErr != nil {
		t.Fatalf("reply %+v", reply)
	}
	st := Open(ch.home)
	if a, err := st.LoadAnswer(q.RunID, q.ID); err != nil || a.Message != "the stable one" {
		t.Errorf("saved answer %+v (%v)", a, err)
	}
	if cur, _ := st.LoadQuestion(q.RunID, q.ID); cur.State != QAnswered {
		t.Errorf("question %s, want %s", cur.State, QAnswered)
	}
	if msgs, _ := ch.sc.Peek(t.Context(), ch.ct.Self, 0); len(msgs) != 0 {
		t.Errorf("the reply is still in the child's inbox: %+v", msgs)
	}
}

func TestContactAskEndsWithASavedAnswerOrACancellation(t *testing.T) {
	ch := newChild(t)
	st := Open(ch.home)
	iv, err := ParseInterview([]byte(`{"questions":[{"id":"api","type":"single","question":"Which API?","options":["Stable","Beta"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	q, done, reply := ch.asked(t, t.Context(), iv)
	// agent-runs answer saved it while no reply could reach the child.
	if _, _, err := st.SaveAnswer(q.RunID, q.ID, `{"responses":[{"id":"api","value":"Stable"}]}`, "agent-runs answer"); err != nil {
		t.Fatal(err)
	}
	if err := ended(t, done); err != nil {
		t.Fatalf("Ask: %v", err)
	}
	if reply.Structured == nil || len(reply.Structured.Responses) != 1 || reply.StructuredErr != nil {
		t.Fatalf("interview reply %+v, want the structured responses", reply)
	}
	q, done, _ = ch.asked(t, t.Context(), nil)
	if _, err := st.UpdateQuestion(q.RunID, q.ID, func(q *Question) error { q.State = QCancelled; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := ended(t, done); err == nil || err.Error() != "question "+q.ID+" was cancelled by the supervisor" {
		t.Fatalf("Ask of a cancelled question: %v", err)
	}
}

func TestContactAskStopsWithItsContextAndKeepsTheQuestion(t *testing.T) {
	ch := newChild(t)
	ctx, cancel := context.WithCancel(t.Context())
	q, done, _ := ch.asked(t, ctx, nil)
	cancel()
	err := ended(t, done)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "question "+q.ID+" stays saved") {
		t.Fatalf("Ask after its context ended: %v", err)
	}
	if cur, err := Open(ch.home).LoadQuestion(q.RunID, q.ID); err != nil || !cur.Unresolved() {
		t.Fatalf("question after the wait stopped: %+v (%v), want it still open", cur, err)
	}
}

func TestReachWaitsForNoBrokerItCannotReach(t *testing.T) {
	ch := newChild(t)
	_, err := Reach(t.Context(), func() (*intercom.Client, error) {
		return intercom.Connect(t.Context(), intercom.Options{Home: ch.home, NoSpawn: true})
	}, Child{Supervisor: "nobody", RunID: NewID(), Agent: "w"}, "")
	if err == nil || !strings.HasPrefix(err.Error(), "supervisor nobody: ") {
		t.Fatalf("Reach of an unknown supervisor: %v, want it refused at once", err)
	}
	// --session names the child's own session when its launcher registered it.
	ct, err := Reach(t.Context(), func() (*intercom.Client, error) {
		return intercom.Connect(t.Context(), intercom.Options{Home: ch.home, NoSpawn: true})
	}, ch.ct.Child, ch.ct.SelfName)
	if err != nil || ct.Self != ch.ct.Self {
		t.Fatalf("Reach with the child's session name: %+v, %v", ct, err)
	}
	ct.Close()
}
