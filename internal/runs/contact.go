package runs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Contact is a supervised child's line to its supervisor
// (`intercom contact-supervisor`): its broker connection, its own session
// and the supervisor's.
type Contact struct {
	Client     *intercom.Client
	Child      Child
	Self       string // the child's session id
	SelfName   string
	Supervisor wire.Session
}

// reachFor is how long Reach waits for a broker that is restarting.
const reachFor = time.Minute

// Reach connects, finds the child's session (session, when set, names it;
// otherwise the run's child session is registered if its launcher did not)
// and the supervisor's. A broker that is restarting (unreachable, or gone in
// the middle) is waited for, up to a minute: nothing is saved before this.
// The caller closes the Contact.
func Reach(ctx context.Context, connect func() (*intercom.Client, error), ch Child, session string) (*Contact, error) {
	giveUp := time.Now().Add(reachFor)
	for {
		c, err := connect()
		if err == nil {
			ct := &Contact{Client: c, Child: ch}
			if err = ct.findSelf(ctx, session); err == nil {
				if ct.Supervisor, err = c.Find(ctx, ch.Supervisor); err == nil {
					return ct, nil
				}
				if !intercom.Unavailable(err) {
					err = fmt.Errorf("supervisor %s: %w", ch.Supervisor, err)
				}
			}
			c.Close()
		}
		if !intercom.Unavailable(err) || time.Now().After(giveUp) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// findSelf sets the child's session: the one named session (id or name),
// else the run's child session, registered now if need be.
func (ct *Contact) findSelf(ctx context.Context, session string) error {
	if session != "" {
		rows, err := ct.Client.List(ctx, intercom.ListOptions{Scope: "all", IncludeDisconnected: true})
		if err != nil {
			return err
		}
		for _, r := range rows {
			if r.ID == session || r.Name == session {
				ct.Self, ct.SelfName = r.ID, r.Name
				return nil
			}
		}
	}
	name := ChildName(ct.Child.Agent, ct.Child.RunID, ct.Child.Index, true)
	s, err := ct.Client.Attach(ctx, intercom.AttachOptions{Name: name, RequestID: "child-" + ct.Child.RunID, NoDeliver: true})
	if err != nil {
		return fmt.Errorf("register child session: %w", err)
	}
	ct.Self, ct.SelfName = s.ID(), name
	return nil
}

// Close ends the connection.
func (ct *Contact) Close() { ct.Client.Close() }

// Progress steers the supervisor with a progress update: it reaches the
// supervisor at its next tool boundary (it is not held until the
// supervisor is idle).
func (ct *Contact) Progress(ctx context.Context, message string) (wire.SendReply, error) {
	text := FormatSupervisorMessage(ReasonProgress, ct.Child.RunID, ct.Child.Agent, ct.Child.Index, ct.SelfName, message, "")
	res, err := ct.Client.Send(ctx, wire.SendRequest{From: ct.Self, To: ct.Supervisor.ID, Text: text, Delivery: wire.DeliverySteer, DeliverySet: true})
	if err != nil {
		return res, fmt.Errorf("progress update: %w", err)
	}
	return res, nil
}

// Reply is the supervisor's answer to a child's question.
type Reply struct {
	Question *Question
	Text     string
	// Structured is an interview's answer read as {"responses":[…]}, or
	// StructuredErr why it could not be.
	Structured    *StructuredReply
	StructuredErr error
}

// forever is the timeout of a question's ask: it has none.
const forever = 10 * 365 * 24 * time.Hour

// recheckEvery is how often a waiting question looks at its answer file
// (an answer `agent-runs answer` saved while no reply could reach it).
const recheckEvery = 5 * time.Second

// Ask puts a blocking question (reason need_decision or interview_request)
// to the supervisor: it is saved durably first, then the supervisor is
// steered with it, then Ask waits with no timeout. Supervisor and broker
// restarts do not end the wait; the answer comes as the supervisor's reply
// or as an answer saved by `agent-runs answer`. It is saved (the first saved
// answer wins) and marked consumed before Ask returns. A question the
// supervisor cancelled ends the wait with an error; so does ctx, leaving
// the question saved.
func (ct *Contact) Ask(ctx context.Context, reason, message string, iv *Interview, log *slog.Logger) (Reply, error) {
	c, ch := ct.Client, ct.Child
	st := Open(c.Home())
	q := &Question{ID: NewQuestionID(), RunID: ch.RunID, Agent: ch.Agent, Index: ch.Index, Reason: reason,
		Message: message, Interview: iv, ChildSession: ct.Self, Supervisor: ct.Supervisor.ID}
	if err := st.SaveQuestion(q); err != nil {
		return Reply{}, fmt.Errorf("save question: %w", err)
	}
	body := message
	if iv != nil {
		body = strings.TrimSpace(body + "\n\n" + iv.Render())
	}
	text := FormatSupervisorMessage(reason, ch.RunID, ch.Agent, ch.Index, ct.SelfName, body, q.ID)
	events, err := c.AskEvents()
	if err != nil {
		return Reply{}, fmt.Errorf("wait for answer: %w", err)
	}
	defer events.Close()
	res, err := c.Send(ctx, wire.SendRequest{From: ct.Self, To: ct.Supervisor.ID, Text: text, Delivery: wire.DeliverySteer, DeliverySet: true,
		ExpectsReply: true, TimeoutMs: forever.Milliseconds()})
	if err != nil {
		return Reply{}, fmt.Errorf("notify supervisor (question %s is saved): %w", q.ID, err)
	}
	if _, err := st.UpdateQuestion(ch.RunID, q.ID, func(q *Question) error { q.AskID = res.ID; return nil }); err != nil {
		return Reply{}, err
	}
	// register (re-)announces this waiter to the broker, retrying while the
	// broker restarts; it runs beside the wait loop, which meanwhile keeps
	// checking the answer file.
	var regMu sync.Mutex
	register := func() {
		regMu.Lock()
		defer regMu.Unlock()
		for ctx.Err() == nil {
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := c.AskWait(rctx, wire.AskWaitRequest{SessionID: ct.Self, AskID: res.ID, To: ct.Supervisor.ID, Text: text, WaitSubject: events.Subject(), TimeoutMs: forever.Milliseconds()})
			cancel()
			if err == nil {
				return
			}
			if !intercom.Unavailable(err) {
				log.Warn("re-register question waiter", "err", err)
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	wake := make(chan struct{}, 1)
	c.OnReconnect(func() {
		register()
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	go register()
	for {
		if a, err := st.LoadAnswer(ch.RunID, q.ID); err == nil {
			return ct.answered(ctx, st, q, a.Message, "")
		}
		if cur, err := st.LoadQuestion(ch.RunID, q.ID); err == nil && cur.State == QCancelled {
			return Reply{}, fmt.Errorf("question %s was cancelled by the supervisor", q.ID)
		}
		wctx, cancel := context.WithTimeout(ctx, recheckEvery)
		ev, err := events.Next(wctx, res.ID)
		cancel()
		if ctx.Err() != nil {
			return Reply{}, fmt.Errorf("stopped waiting; question %s stays saved for `agent-runs answer`: %w", q.ID, ctx.Err())
		}
		if err != nil {
			select { // a reconnect or the periodic re-check of the answer file
			case <-wake:
			default:
			}
			continue
		}
		if ev.Reply != nil {
			return ct.answered(ctx, st, q, ev.Reply.Text, ev.Reply.ID)
		}
		// The supervisor left or the obligation lapsed: the question stays;
		// wait again.
		go register()
	}
}

// answered saves the answer (the first saved answer wins), marks it
// consumed and acknowledges the reply message, if it came as one.
func (ct *Contact) answered(ctx context.Context, st Files, q *Question, text, replyID string) (Reply, error) {
	a, _, err := st.SaveAnswer(q.RunID, q.ID, text, "intercom reply")
	if err != nil && !errors.Is(err, ErrConflict) {
		return Reply{}, fmt.Errorf("save answer: %w", err)
	}
	if a != nil {
		text = a.Message
	}
	if err := st.MarkConsumed(q.RunID, q.ID); err != nil {
		return Reply{}, err
	}
	if replyID != "" {
		_, _ = ct.Client.Ack(ctx, ct.Self, replyID)
	}
	r := Reply{Question: q, Text: text}
	if q.Interview != nil {
		r.Structured, r.StructuredErr = ParseStructuredReply(text, q.Interview)
	}
	return r, nil
}
