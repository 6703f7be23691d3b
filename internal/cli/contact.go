package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/intercom-dev/intercom/internal/bounded"
	"github.com/intercom-dev/intercom/internal/kongrun"
	"github.com/intercom-dev/intercom/internal/runs"
	"github.com/intercom-dev/intercom/internal/schema"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// ContactCmd lets a supervised child reach its supervisor.
type ContactCmd struct {
	Reason    string `required:"" enum:"need_decision,interview_request,progress_update" help:"need_decision and interview_request block until answered; progress_update does not."`
	Message   string `short:"m" help:"The decision request, interview note, or progress update." placeholder:"TEXT"`
	Interview string `help:"Interview JSON file ('-' for stdin): {title?, description?, questions:[{id,type,question,options?,context?}]}." placeholder:"FILE|-"`
}

// Help shows examples.
func (ContactCmd) Help() string {
	return `Only inside a run started by 'agent-runs start' (INTERCOM_SUPERVISOR,
INTERCOM_RUN_ID, INTERCOM_CHILD_AGENT and INTERCOM_CHILD_INDEX set).

need_decision and interview_request save the question durably first, then
steer the supervisor, then wait with no timeout: supervisor or broker
restarts do not end the wait. The answer is printed as
"Reply from supervisor: …"; with --json an interview answer that parses as
{"responses":[{"id","value"}]} is returned as structured_reply (or
structured_reply_error). progress_update returns at once; it steers (the
supervisor sees it at its next tool boundary).

Examples:
  intercom contact-supervisor --reason need_decision -m "403 or 401 for expired tokens?"
  intercom contact-supervisor --reason interview_request -m "Before I migrate:" --interview questions.json
  intercom contact-supervisor --reason progress_update -m "Bug is in the retry wrapper, fixing it there."`
}

// Run contacts the supervisor.
func (cc *ContactCmd) Run(e *env) error {
	ce, err := runs.ChildFromEnv(os.Getenv)
	if err != nil {
		return kongrun.Usage(err)
	}
	var iv *runs.Interview
	switch cc.Reason {
	case runs.ReasonInterview:
		if cc.Interview == "" {
			return kongrun.Usagef("interview_request requires --interview FILE|-")
		}
		var data []byte
		if cc.Interview == "-" {
			data, err = bounded.Read(e.stdin, "--interview - (stdin)", wire.MaxMessageBytes)
		} else {
			data, err = bounded.ReadFile(cc.Interview, "--interview "+cc.Interview, wire.MaxMessageBytes)
		}
		if err != nil {
			return kongrun.Usagef("read interview: %w", err)
		}
		if iv, err = runs.ParseInterview(data); err != nil {
			return kongrun.Usage(err)
		}
	default:
		if cc.Interview != "" {
			return kongrun.Usagef("--interview is only valid with --reason interview_request")
		}
		if strings.TrimSpace(cc.Message) == "" {
			return kongrun.Usagef("%s requires --message", cc.Reason)
		}
	}
	if cc.Message != "" { // optional with an interview; required (above) otherwise
		if err := checkMessage(cc.Message, nil); err != nil {
			return err
		}
	}
	c, self, childName, sup, err := e.reachSupervisor(ce)
	if err != nil {
		return err
	}
	defer c.Close()
	if cc.Reason == runs.ReasonProgress {
		text := runs.FormatSupervisorMessage(cc.Reason, ce.RunID, ce.Agent, ce.Index, childName, cc.Message, "")
		// The reference's guide: a progress update steers at the next tool
		// boundary (it is not held until the supervisor is idle).
		res, err := c.Send(e.ctx, wire.SendRequest{From: self, To: sup.ID, Text: text, Delivery: wire.DeliverySteer, DeliverySet: true})
		if err != nil {
			return fmt.Errorf("progress update: %w", err)
		}
		if e.g.JSON {
			return e.printJSON(schema.ProgressAccepted{Accepted: true, ID: res.ID, Supervisor: sup.Name})
		}
		fmt.Fprintf(e.stdout, "Progress update accepted for supervisor %s. It steers at the supervisor's next tool boundary; broker acceptance does not confirm the supervisor has read or acted on it.\n", sup.Name)
		return nil
	}
	return e.blockingQuestion(c, cc, ce, iv, self, childName, sup)
}

// childSession returns the child's session id and name, registering it when
// the run's launcher did not.
func (e *env) childSession(c *intercom.Client, ce runs.Child) (string, string, error) {
	name := runs.ChildName(ce.Agent, ce.RunID, ce.Index, true)
	if e.g.Session != "" {
		rows, err := c.List(e.ctx, intercom.ListOptions{Scope: "all", IncludeDisconnected: true})
		if err != nil {
			return "", "", err
		}
		for _, r := range rows {
			if r.ID == e.g.Session || r.Name == e.g.Session {
				return r.ID, r.Name, nil
			}
		}
	}
	s, err := c.Attach(e.ctx, intercom.AttachOptions{Name: name, RequestID: "child-" + ce.RunID, NoDeliver: true})
	if err != nil {
		return "", "", fmt.Errorf("register child session: %w", err)
	}
	return s.ID(), name, nil
}

// reachSupervisor connects, registers the child's session and finds the
// supervisor's. A broker that is restarting (unreachable, or gone in the
// middle) is waited for, up to a minute: nothing is saved before this.
func (e *env) reachSupervisor(ce runs.Child) (c *intercom.Client, self, childName string, sup *wire.Session, err error) {
	giveUp := time.Now().Add(time.Minute)
	for {
		c, err = e.connect()
		if err == nil {
			if self, childName, err = e.childSession(c, ce); err == nil {
				if sup, err = e.resolveTarget(c, ce.Supervisor); err == nil {
					return c, self, childName, sup, nil
				}
				if !intercom.Unavailable(err) {
					err = fmt.Errorf("supervisor %s: %w", ce.Supervisor, err)
				}
			}
			c.Close()
		}
		if !intercom.Unavailable(err) || time.Now().After(giveUp) {
			return nil, "", "", nil, err
		}
		select {
		case <-e.ctx.Done():
			return nil, "", "", nil, err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (e *env) resolveTarget(c *intercom.Client, target string) (*wire.Session, error) {
	rows, err := c.List(e.ctx, intercom.ListOptions{Scope: "all", IncludeDisconnected: true})
	if err != nil {
		return nil, err
	}
	ptrs := make([]*wire.Session, len(rows))
	for i := range rows {
		ptrs[i] = &rows[i]
	}
	return resolveSession(ptrs, target)
}

const forever = 10 * 365 * 24 * time.Hour

func (e *env) blockingQuestion(c *intercom.Client, cc *ContactCmd, ce runs.Child, iv *runs.Interview, self, childName string, sup *wire.Session) error {
	l := c.Layout()
	st := runs.Store{Dir: l.RunsDir()}
	q := &runs.Question{ID: runs.NewQuestionID(), RunID: ce.RunID, Agent: ce.Agent, Index: ce.Index, Reason: cc.Reason,
		Message: cc.Message, Interview: iv, ChildSession: self, Supervisor: sup.ID}
	if err := st.SaveQuestion(q); err != nil {
		return fmt.Errorf("save question: %w", err)
	}
	body := cc.Message
	if iv != nil {
		body = strings.TrimSpace(body + "\n\n" + iv.Render())
	}
	text := runs.FormatSupervisorMessage(cc.Reason, ce.RunID, ce.Agent, ce.Index, childName, body, q.ID)
	waitSubj := c.Conn().NewRespInbox()
	sub, err := c.Conn().SubscribeSync(waitSubj)
	if err != nil {
		return fmt.Errorf("wait for answer: %w", err)
	}
	defer sub.Unsubscribe()
	res, err := c.Send(e.ctx, wire.SendRequest{From: self, To: sup.ID, Text: text, Delivery: wire.DeliverySteer, DeliverySet: true,
		ExpectsReply: true, TimeoutMs: forever.Milliseconds()})
	if err != nil {
		return fmt.Errorf("notify supervisor (question %s is saved): %w", q.ID, err)
	}
	if _, err := st.UpdateQuestion(ce.RunID, q.ID, func(q *runs.Question) error { q.AskID = res.ID; return nil }); err != nil {
		return err
	}
	// register (re-)announces this waiter to the broker, retrying while the
	// broker restarts; it runs beside the wait loop, which meanwhile keeps
	// checking the answer file.
	var regMu sync.Mutex
	register := func() {
		regMu.Lock()
		defer regMu.Unlock()
		for e.ctx.Err() == nil {
			ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
			err := c.AskWait(ctx, wire.AskWaitRequest{SessionID: self, AskID: res.ID, To: sup.ID, Text: text, WaitSubject: waitSubj, TimeoutMs: forever.Milliseconds()})
			cancel()
			if err == nil {
				return
			}
			if !intercom.Unavailable(err) {
				e.log.Warn("re-register question waiter", "err", err)
				return
			}
			select {
			case <-e.ctx.Done():
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
		if a, err := st.LoadAnswer(ce.RunID, q.ID); err == nil {
			return e.answered(c, st, q, iv, a.Message, self, "")
		}
		if cur, err := st.LoadQuestion(ce.RunID, q.ID); err == nil && cur.State == runs.QCancelled {
			return kongrun.Exit(1, fmt.Sprintf("question %s was cancelled by the supervisor", q.ID))
		}
		ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
		m, err := sub.NextMsgWithContext(ctx)
		cancel()
		if e.ctx.Err() != nil {
			return fmt.Errorf("stopped waiting; question %s stays saved for `agent-runs answer`: %w", q.ID, e.ctx.Err())
		}
		if err != nil {
			select { // a reconnect or the periodic re-check of the answer file
			case <-wake:
			default:
			}
			continue
		}
		var ev wire.AskEvent
		if json.Unmarshal(m.Data, &ev) != nil || ev.AskID != res.ID {
			continue
		}
		if ev.Reply != nil {
			return e.answered(c, st, q, iv, ev.Reply.Text, self, ev.Reply.ID)
		}
		// The supervisor left or the obligation lapsed: the question stays;
		// wait again.
		go register()
	}
}

// answered saves the answer (the first saved answer wins), marks it
// consumed, acknowledges the reply message and prints it.
func (e *env) answered(c *intercom.Client, st runs.Store, q *runs.Question, iv *runs.Interview, text, self, replyID string) error {
	a, _, err := st.SaveAnswer(q.RunID, q.ID, text, "intercom reply")
	if err != nil && !errors.Is(err, runs.ErrConflict) {
		return fmt.Errorf("save answer: %w", err)
	}
	if a != nil {
		text = a.Message
	}
	if err := st.MarkConsumed(q.RunID, q.ID); err != nil {
		return err
	}
	if replyID != "" {
		_, _ = c.Ack(e.ctx, self, replyID)
	}
	out := schema.SupervisorAnswer{Reply: text, QuestionID: q.ID, RunID: q.RunID}
	if iv != nil {
		if sr, err := runs.ParseStructuredReply(text, iv); err != nil {
			out.StructuredReplyError = err.Error()
		} else {
			out.StructuredReply = sr
		}
	}
	if e.g.JSON {
		return e.printJSON(out)
	}
	fmt.Fprintf(e.stdout, "Reply from supervisor: %s\n", text)
	if out.StructuredReplyError != "" {
		fmt.Fprintf(e.stdout, "(structured reply not usable: %s)\n", out.StructuredReplyError)
	}
	return nil
}
