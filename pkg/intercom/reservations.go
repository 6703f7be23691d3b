package intercom

import (
	"context"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// Reserve asks for leases on req.Paths (relative to the project root), all
// or none: a reply with Refused granted nothing.
func (c *Client) Reserve(ctx context.Context, req wire.ReserveRequest) (wire.ReserveReply, error) {
	res, err := call[wire.ReserveReply](ctx, c, wire.SubjReserve, req)
	if err != nil {
		return wire.ReserveReply{}, err
	}
	return *res, nil
}

// Release lets go of a session's leases.
func (c *Client) Release(ctx context.Context, req wire.ReleaseRequest) (wire.ReleaseReply, error) {
	res, err := call[wire.ReleaseReply](ctx, c, wire.SubjRelease, req)
	if err != nil {
		return wire.ReleaseReply{}, err
	}
	return *res, nil
}

// Reservations reads leases, checks paths and tokens, or reads a path's
// history (see wire.ReservationsRequest).
func (c *Client) Reservations(ctx context.Context, req wire.ReservationsRequest) (wire.ReservationsReply, error) {
	res, err := call[wire.ReservationsReply](ctx, c, wire.SubjReservations, req)
	if err != nil {
		return wire.ReservationsReply{}, err
	}
	return *res, nil
}
