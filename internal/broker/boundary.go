package broker

import (
	"errors"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// boundary is a hook's one request at a turn boundary: the state report
// (setState) and the fetch (inbox) of a held session, in that order, so
// that a session reported idle gets its queued messages in the same reply.
// An unknown or unconnected session gets Held false and nothing done.
func (b *Broker) boundary(req wire.BoundaryRequest) (*wire.BoundaryReply, error) {
	s, ok := b.sessions.get(req.SessionID)
	if !ok || !s.Connected {
		return &wire.BoundaryReply{}, nil
	}
	out := &wire.BoundaryReply{Held: true}
	if req.Status != "" {
		if _, err := b.setState(wire.StateRequest{SessionID: req.SessionID, Status: req.Status}); err != nil {
			var we *wire.Error
			if errors.As(err, &we) && (we.Code == wire.CodePeerOffline || we.Code == wire.CodeNotFound) {
				return &wire.BoundaryReply{}, nil // its holder left meanwhile
			}
			out.StateError = err.Error()
		}
	}
	if !req.Fetch {
		return out, nil
	}
	msgs, err := b.deliverable(req.SessionID, 0, true)
	if err != nil {
		return nil, err
	}
	out.Messages = msgs
	return out, nil
}
