package agentsession

import (
	"context"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// Client is what agentsession asks of the broker. *intercom.Client has it,
// and so has the hook executable's own client (internal/hookclient), which
// links no NATS library: each harness hook starts a process, and that
// library's start-up costs more than the hook's whole work.
type Client interface {
	// Boundary reports status of held session sid and, with fetch, fetches
	// what may be delivered now (wire.SubjBoundary); wire.ErrNoBoundary
	// from a broker that predates it.
	Boundary(ctx context.Context, sid, status string, fetch bool) (wire.BoundaryReply, error)
	SetState(ctx context.Context, sid, status string, acceptsAsks *bool) (wire.Session, error)
	// Inbox and Peek fetch (Peek: look at) sid's deliverable messages,
	// leaving out those whose ack is journaled (package ackjournal).
	Inbox(ctx context.Context, sid string, limit int) ([]wire.Message, error)
	Peek(ctx context.Context, sid string, limit int) ([]wire.Message, error)
	// AckShown acknowledges what this process showed, journaling what the
	// broker did not confirm.
	AckShown(ctx context.Context, sid string, ids ...string) error
	// Connected reports whether sid is held (has a connected holder).
	Connected(ctx context.Context, sid string) (bool, error)
	Close()
}
