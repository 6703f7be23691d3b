package reservations

import (
	"context"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// HeldBy returns the paths each session holds in the project of dir (for
// list and ui); nil when the broker cannot say.
func HeldBy(ctx context.Context, c *intercom.Client, dir string) map[string][]string {
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
