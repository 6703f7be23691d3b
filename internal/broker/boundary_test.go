package broker

import (
	"testing"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// A boundary request reports the state and then fetches, in one reply: a
// queued message waits while the session is busy and comes in the reply
// of the request that reports it idle. A session without a holder gets
// Held false and nothing done.
func TestBoundaryReportsThenFetches(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := t.Context()
	agent := w.attach("agent", func(o *intercom.AttachOptions) { o.NoDeliver = true })
	peer := w.attach("peer")
	sid := agent.ID()

	rep, err := w.c.Boundary(ctx, sid, "tool:Bash", true)
	if err != nil || !rep.Held || len(rep.Messages) != 0 || rep.StateError != "" {
		t.Fatalf("busy boundary: %+v, %v", rep, err)
	}
	w.send(peer, sid, "queued note", func(r *wire.SendRequest) { r.Delivery = wire.DeliveryQueue })
	if rep, err = w.c.Boundary(ctx, sid, "tool:Read", true); err != nil || len(rep.Messages) != 0 {
		t.Fatalf("a busy session was handed a queued message: %+v, %v", rep, err)
	}
	rows, err := w.c.List(ctx, intercom.ListOptions{Scope: "all", ID: sid})
	if err != nil || len(rows) != 1 || rows[0].Status != "tool:Read" {
		t.Fatalf("state after boundary: %+v, %v", rows, err)
	}
	if rep, err = w.c.Boundary(ctx, sid, "idle", false); err != nil || !rep.Held || len(rep.Messages) != 0 {
		t.Fatalf("boundary without fetch: %+v, %v", rep, err)
	}
	if rep, err = w.c.Boundary(ctx, sid, "idle", true); err != nil || len(rep.Messages) != 1 || rep.Messages[0].Text != "queued note" {
		t.Fatalf("idle boundary: %+v, %v", rep, err)
	}
	// Fetched is not acknowledged: the next boundary has it again.
	if rep, err = w.c.Boundary(ctx, sid, "", true); err != nil || len(rep.Messages) != 1 {
		t.Fatalf("boundary after an unacknowledged fetch: %+v, %v", rep, err)
	}
	if err := w.c.AckShown(ctx, sid, rep.Messages[0].ID); err != nil {
		t.Fatal(err)
	}
	if rep, err = w.c.Boundary(ctx, sid, "", true); err != nil || len(rep.Messages) != 0 {
		t.Fatalf("boundary after the ack: %+v, %v", rep, err)
	}

	if rep, err = w.c.Boundary(ctx, "0123456789abcdef0123456789abcdef", "idle", true); err != nil || rep.Held {
		t.Fatalf("unknown session: %+v, %v", rep, err)
	}
	if err := agent.Detach(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "agent disconnected", func() bool {
		rep, err := w.c.Boundary(ctx, sid, "idle", true)
		return err == nil && !rep.Held
	})
}
