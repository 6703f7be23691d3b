package broker

import (
	"github.com/intercom-dev/intercom/pkg/wire"
)

// The ask requests: pending, askwait, askcancel (asks.go holds the table).

// askCancel withdraws an ask whose asker stopped waiting.
func (b *Broker) askCancel(req struct {
	SessionID string `json:"session_id"`
	AskID     string `json:"ask_id"`
}) (*wire.Empty, error) {
	b.asks.cancel(req.SessionID, req.AskID)
	return &wire.Empty{}, nil
}

// pending lists the asks a session has to answer.
func (b *Broker) pending(req wire.SessionRef) (*wire.PendingReply, error) {
	if !b.sessions.known(req.SessionID) {
		return nil, wire.Errorf(wire.CodeNotFound, "no session with id %q", req.SessionID)
	}
	targets := b.sessions.targetsNow()
	return &wire.PendingReply{Asks: b.asks.pendingTo(req.SessionID, func(id string) string { return targets[id] })}, nil
}

// askWait re-registers a waiter for an ask sent earlier (the broker may have
// restarted, or the asked session reconnected), and hands over a reply that
// is already stored.
func (b *Broker) askWait(req wire.AskWaitRequest) (*wire.Empty, error) {
	if err := wire.ValidateAskWait(req); err != nil {
		return nil, err
	}
	from, okFrom := b.sessions.get(req.SessionID)
	to, okTo := b.sessions.get(req.To)
	if !okFrom || !okTo {
		return nil, wire.Errorf(wire.CodeNotFound, "askwait: unknown session")
	}
	a, ok := b.asks.waitFor(req.AskID, from.peer(), to.peer(), req.Text, askTimeout(req.TimeoutMs), req.WaitSubject)
	if !ok {
		return nil, wire.Errorf(wire.CodeBadRequest, "askwait: ask %s belongs to another session", req.AskID)
	}
	msgs, err := scanInbox(b.st, from.ID, 0)
	if err != nil {
		return nil, err
	}
	for i := range msgs {
		m := &msgs[i]
		if m.ReplyTo == req.AskID && m.From.ID == to.ID && b.deliv.claim(from.ID, m.ID) {
			b.publish(req.WaitSubject, wire.AskEvent{AskID: req.AskID, Reply: m})
			b.asks.retire(a)
			break
		}
	}
	return &wire.Empty{}, nil
}
