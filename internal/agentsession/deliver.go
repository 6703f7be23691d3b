package agentsession

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/intercom-dev/intercom/internal/runenv"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// DeliverOptions shape one hand-over of waiting messages.
type DeliverOptions struct {
	Render func(wire.Message) string
	Limit  int // bytes per hand-over (hooks.MaxContext for hooks): the digest's budget
	// Budget is the digest's size budget (config digestBytes): a hand-over
	// carries at most min(Limit, Budget) bytes (0: Limit).
	Budget int
	// Supervisor is the reader's supervisor session, by id or name (its
	// messages come second in a digest); "" reads SupervisorFromEnv.
	Supervisor string
	WakeOnly   bool // leave what does not wake an agent (wire.Message.Wakes)
	// ContinueOnly hands over only the next part of a message already
	// being delivered in parts (a Stop hook that already blocked once).
	ContinueOnly bool
}

// Deliver hands the session's waiting messages to write, chosen by pick
// and composed by compose, and acknowledges exactly what the written text
// completes: whole messages, or the last part of one delivered in parts
// (the part in flight is recorded beside the bindings). It holds the
// session's delivery lock throughout, so two deliverers of one agent never
// hand a message over twice. A write error acknowledges nothing.
func (s Agents) Deliver(ctx context.Context, c Client, session string, o DeliverOptions, write func(text string) error) (Batch, error) {
	unlock, err := s.LockDelivery(ctx, session)
	if err != nil {
		return Batch{}, err
	}
	defer unlock()
	h := s.handover(session)
	if o.ContinueOnly && h.recorded == nil {
		return Batch{}, nil
	}
	waiting, err := c.Inbox(ctx, session, 0)
	if err != nil {
		return Batch{}, err
	}
	return h.deliver(ctx, c, waiting, o, write)
}

// Boundary is a hook's report and delivery at a turn boundary: it reports
// status ("" for none) and hands the waiting messages over as Deliver
// does, but in one broker request (intercom.Client.Boundary), plus the
// acknowledgement when something was handed over. held is false, with
// nothing done, when the session has no holder: the caller joins it (Join)
// and calls again. A broker that predates the request gets SetState and
// Deliver's fetch.
func (s Agents) Boundary(ctx context.Context, c Client, session, status string, o DeliverOptions, write func(text string) error) (b Batch, held bool, err error) {
	unlock, err := s.LockDelivery(ctx, session)
	if err != nil {
		return Batch{}, false, err
	}
	defer unlock()
	h := s.handover(session)
	fetch := !o.ContinueOnly || h.recorded != nil
	rep, err := c.Boundary(ctx, session, status, fetch)
	if errors.Is(err, wire.ErrNoBoundary) {
		rep, err = oldBoundary(ctx, c, session, status, fetch)
	}
	if err != nil || !rep.Held || !fetch {
		return Batch{}, rep.Held, err
	}
	b, err = h.deliver(ctx, c, rep.Messages, o, write)
	return b, true, err
}

// oldBoundary is Boundary's request as two, for a broker without it: the
// state report (a session without a holder refuses it) and the fetch.
func oldBoundary(ctx context.Context, c Client, session, status string, fetch bool) (wire.BoundaryReply, error) {
	rep := wire.BoundaryReply{Held: true}
	if status != "" {
		if _, err := c.SetState(ctx, session, status, nil); err != nil {
			var we *wire.Error
			if errors.As(err, &we) && (we.Code == wire.CodePeerOffline || we.Code == wire.CodeNotFound) {
				return wire.BoundaryReply{}, nil
			}
			rep.StateError = err.Error()
		}
	}
	if !fetch {
		return rep, nil
	}
	var err error
	rep.Messages, err = c.Inbox(ctx, session, 0)
	return rep, err
}

// handover is one hand-over in progress under the session's delivery
// lock: the part delivery recorded beside the bindings, if any.
type handover struct {
	session, progPath string
	recorded          *Progress
}

func (s Agents) handover(session string) handover {
	progPath := filepath.Join(s.dir, "parts-"+session+".json")
	return handover{session: session, progPath: progPath, recorded: loadProgress(progPath)}
}

// deliver hands waiting over to write (pick, compose) and acknowledges
// what the written text completes.
func (h handover) deliver(ctx context.Context, c Client, waiting []wire.Message, o DeliverOptions, write func(text string) error) (Batch, error) {
	msgs, prog := pick(waiting, h.recorded, o)
	if o.Budget > 0 && o.Budget < o.Limit {
		o.Limit = o.Budget
	}
	if o.Supervisor == "" {
		o.Supervisor = SupervisorFromEnv()
	}
	b := compose(msgs, o, prog)
	if b.Text != "" {
		if err := write(b.Text); err != nil {
			return Batch{}, err // nothing acknowledged: handed over again next time
		}
	}
	if b.Progress != nil || h.recorded != nil {
		if err := saveProgress(h.progPath, b.Progress); err != nil {
			return b, fmt.Errorf("record part delivery: %w", err)
		}
	}
	if len(b.Ack) > 0 {
		if err := c.AckShown(ctx, h.session, b.Ack...); err != nil {
			return b, fmt.Errorf("acknowledge: %w", err)
		}
	}
	return b, nil
}

// pick is the one choice of what a hand-over may carry, of the waiting
// messages, oldest first. The message of the part delivery in flight
// (recorded) goes first, passive or not, and prog says so; when it no
// longer waits (acknowledged elsewhere, by `intercom inbox`), prog is nil
// and delivery goes on with the rest. ContinueOnly carries nothing but the
// message in flight; WakeOnly leaves what does not wake (wire.Message.Wakes:
// passive messages, and steers the broker's wake budget holds back).
func pick(waiting []wire.Message, recorded *Progress, o DeliverOptions) (msgs []wire.Message, prog *Progress) {
	if recorded != nil {
		if i := slices.IndexFunc(waiting, func(m wire.Message) bool { return m.ID == recorded.ID }); i >= 0 {
			msgs, prog = []wire.Message{waiting[i]}, recorded
			waiting = slices.Delete(slices.Clone(waiting), i, i+1)
		}
	}
	if o.ContinueOnly {
		return msgs, prog
	}
	for _, m := range waiting {
		if !o.WakeOnly || m.Wakes() {
			msgs = append(msgs, m)
		}
	}
	return msgs, prog
}

// WholeOptions shape a hand-over of whole messages (DeliverWhole).
type WholeOptions struct {
	WakeOnly bool // leave what does not wake an agent (wire.Message.Wakes)
	Limit    int  // at most this many (0: all)
	Peek     bool // show them without fetching or acknowledging
}

// DeliverWhole hands the session's waiting messages to write as they are
// (for output that carries them whole: --json, inbox) and then
// acknowledges them, under the session's delivery lock like Deliver. write
// is called once, also with none. A write error acknowledges nothing. It
// returns what was written; an error after that is the acknowledgement's
// (the session's holder retries it).
func (s Agents) DeliverWhole(ctx context.Context, c Client, session string, o WholeOptions, write func([]wire.Message) error) ([]wire.Message, error) {
	unlock, err := s.LockDelivery(ctx, session)
	if err != nil {
		return nil, err
	}
	defer unlock()
	fetch := c.Inbox
	if o.Peek {
		fetch = c.Peek // looking is not fetching: the trace records no fetch
	}
	msgs, err := fetch(ctx, session, o.Limit)
	if err != nil {
		return nil, err
	}
	if o.WakeOnly {
		msgs = slices.DeleteFunc(msgs, func(m wire.Message) bool { return !m.Wakes() })
	}
	if err := write(msgs); err != nil {
		return nil, err
	}
	if o.Peek || len(msgs) == 0 {
		return msgs, nil
	}
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
	}
	return msgs, c.AckShown(ctx, session, ids...)
}

// SupervisorFromEnv is the supervisor session of the run this process is a
// child of (runenv.ChildFromEnv), "" outside a run.
func SupervisorFromEnv() string {
	ch, err := runenv.ChildFromEnv(os.Getenv)
	if err != nil {
		return ""
	}
	return ch.Supervisor
}
