package intercom

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// ErrNoBoundary is Boundary's error from a broker that predates the
// request (no responder to it): the caller makes it as SetState and Inbox.
var ErrNoBoundary = wire.ErrNoBoundary

// Boundary is a hook's one request at a turn boundary: it reports status
// ("" for none) of held session sid and, with fetch, fetches what may be
// delivered now, as SetState and then Inbox would in two (journaled acks
// are settled first and their messages left out, as Inbox does). Held is
// false, and nothing done, when sid has no holder.
func (c *Client) Boundary(ctx context.Context, sid, status string, fetch bool) (wire.BoundaryReply, error) {
	if fetch {
		if err := c.settleJournal(ctx, sid); err != nil {
			c.log.Debug("journaled acks not confirmed", "session", sid, "err", err)
		}
	}
	res, err := callDecoding(ctx, c, wire.SubjBoundary, wire.BoundaryRequest{SessionID: sid, Status: status, Fetch: fetch}, wire.DecodeBoundaryReply)
	if errors.Is(err, nats.ErrNoResponders) {
		return wire.BoundaryReply{}, fmt.Errorf("%w: %v", ErrNoBoundary, err)
	}
	if err != nil {
		return wire.BoundaryReply{}, err
	}
	res.Messages = c.journal().Without(sid, res.Messages)
	return *res, nil
}

// Connected reports whether session sid is known and held (has a
// connected holder).
func (c *Client) Connected(ctx context.Context, sid string) (bool, error) {
	rows, err := c.List(ctx, ListOptions{Scope: "all", IncludeDisconnected: true, ID: sid})
	if err != nil {
		return false, err
	}
	for _, r := range rows {
		if r.ID == sid && r.Connected {
			return true, nil
		}
	}
	return false, nil
}
