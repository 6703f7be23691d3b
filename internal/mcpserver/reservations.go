package mcpserver

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/intercom-dev/intercom/internal/render"
	"github.com/intercom-dev/intercom/internal/reservations"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// doReservation runs the reserve, release and reservations actions as
// session self, with paths relative to the server's working directory
// (the agent's).
func doReservation(ctx context.Context, c *intercom.Client, self string, in ToolInput) (string, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	place, paths, err := reservations.ResolveAll(cwd, in.Paths)
	if err != nil {
		return "", err
	}
	switch in.Action {
	case "reserve":
		var ttl time.Duration
		if in.TTL != "" {
			if ttl, err = time.ParseDuration(in.TTL); err != nil {
				return "", fmt.Errorf("reserve: ttl: %w", err)
			}
		}
		res, err := c.Reserve(ctx, wire.ReserveRequest{SessionID: self, Project: place.Project, Paths: paths, Shared: in.Shared, TTL: ttl, Reason: in.Reason})
		if err != nil {
			return "", err
		}
		if len(res.Refused) > 0 {
			return "Not reserved (nothing was): " + reservations.BlockMessage(res.Refused), nil
		}
		var b strings.Builder
		for _, g := range res.Granted {
			fmt.Fprintf(&b, "Reserved %s (token %d, shared %v, expires %s without activity).\n", g.Path, g.Token, g.Shared, g.Expires.Format(time.RFC3339))
		}
		return b.String(), nil
	case "release":
		if len(paths) == 0 && !in.All {
			return "", fmt.Errorf("release needs paths or all")
		}
		req := wire.ReleaseRequest{SessionID: self, All: in.All && len(paths) == 0}
		if !req.All {
			req.Project, req.Paths = place.Project, paths
		}
		res, err := c.Release(ctx, req)
		if err != nil {
			return "", err
		}
		if len(res.Released) == 0 {
			return "Nothing to release.", nil
		}
		var b strings.Builder
		for _, g := range res.Released {
			fmt.Fprintf(&b, "Released %s (token %d).\n", g.Path, g.Token)
		}
		return b.String(), nil
	}
	req := wire.ReservationsRequest{Project: place.Project}
	if len(paths) > 0 {
		req.Path = paths[0]
	}
	res, err := c.Reservations(ctx, req)
	if err != nil {
		return "", err
	}
	if len(res.Reservations) == 0 {
		return "No reservations.", nil
	}
	var b strings.Builder
	for _, r := range res.Reservations {
		mine := ""
		if r.SessionID == self {
			mine = " (yours)"
		}
		fmt.Fprintf(&b, "• %s: %s%s, token %d, since %s", r.Path, render.Line(r.Name), mine, r.Token, r.Granted.Format(time.RFC3339))
		if r.Reason != "" {
			fmt.Fprintf(&b, ": %s", render.Line(r.Reason))
		}
		b.WriteString("\n")
	}
	return b.String(), nil
}
