package broker

import (
	"github.com/intercom-dev/intercom/pkg/wire"
)

// inbox returns stored messages that may be delivered now, for harnesses
// that fetch at tool boundaries instead of holding a connection.
func (b *Broker) inbox(req wire.InboxRequest) (*wire.InboxReply, error) {
	out, err := b.deliverable(req.SessionID, req.Limit, !req.Peek)
	if err != nil {
		return nil, err
	}
	return &wire.InboxReply{Messages: out}, nil
}

// deliverable lists sid's stored messages that may be handed over now
// (delivery.deliverable says which).
func (b *Broker) deliverable(sid string, limit int, recordFetch bool) ([]wire.Message, error) {
	if !b.sessions.known(sid) {
		return nil, wire.Errorf(wire.CodeNotFound, "no session with id %q", sid)
	}
	msgs, err := scanInbox(b.st, sid, 0)
	if err != nil {
		return nil, err
	}
	return b.deliv.deliverable(sid, msgs, limit, recordFetch), nil
}
