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
var ErrNoBoundary = errors.New("the broker does not take boundary requests (an older broker)")

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
	res.Messages = c.withoutOwed(sid, res.Messages)
	return *res, nil
}
