package reservations

import (
	"context"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// Lister is the broker request reservations make: *intercom.Client has
// it, and so has the hook executable's client (internal/hookclient).
type Lister interface {
	Reservations(ctx context.Context, req wire.ReservationsRequest) (wire.ReservationsReply, error)
}

// HeldBy returns the paths each session holds in the project of dir (for
// list and ui); nil when the broker cannot say.
func HeldBy(ctx context.Context, c Lister, dir string) map[string][]string {
	res, err := c.Reservations(ctx, wire.ReservationsRequest{Project: PlaceOf(dir).Project})
	if err != nil {
		return nil
	}
	out := map[string][]string{}
	for _, r := range res.Reservations {
		out[r.SessionID] = append(out[r.SessionID], r.Path)
	}
	return out
}
