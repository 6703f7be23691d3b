package intercom

import (
	"context"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// Held lists the messages held for a person's decision: those to session
// (a name or id), or all ("").
func (c *Client) Held(ctx context.Context, session string) ([]wire.HeldMessage, error) {
	res, err := call[wire.HeldReply](ctx, c, wire.SubjHeld, wire.HeldRequest{Session: session})
	if err != nil {
		return nil, err
	}
	return res.Held, nil
}

// DecideHeld approves (delivers) or refuses a held message, as session by
// (which must be a person's: the broker checks).
func (c *Client) DecideHeld(ctx context.Context, by, id string, approve bool) (wire.HeldDecideReply, error) {
	res, err := call[wire.HeldDecideReply](ctx, c, wire.SubjHeldDecide, wire.HeldDecideRequest{ID: id, By: by, Approve: approve})
	if err != nil {
		return wire.HeldDecideReply{}, err
	}
	return *res, nil
}
