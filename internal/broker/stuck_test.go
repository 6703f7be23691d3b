package broker

import (
	"testing"
	"time"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// stuckAfter gives a world small stall thresholds.
func stuckAfter(busy, steers time.Duration) func(*Options) {
	return func(o *Options) { o.Stuck = StallThresholds{BusyAfter: busy, SteersAfter: steers} }
}

// row is session id's list row, as every list shows it.
func (w *world) row(id string) wire.Session {
	w.t.Helper()
	rows, err := w.c.List(w.t.Context(), intercom.ListOptions{Scope: "all", ID: id})
	if err != nil || len(rows) != 1 {
		w.t.Fatalf("list %s: %v (%d rows)", id, err, len(rows))
	}
	return rows[0]
}

// A session busy with the same status and no boundary for longer than the
// threshold shows as stuck (state still busy), since its last report; an
// idle one never does; the next boundary clears the mark.
func TestStuckWhenBusyWithNoBoundary(t *testing.T) {
	w := newWorld(t, stuckAfter(300*time.Millisecond, 0))
	idle := w.attach("idle", func(o *intercom.AttachOptions) { o.Status = "idle" })
	busy := w.attach("busy", func(o *intercom.AttachOptions) { o.Status = "tool:bash" })
	before := time.Now()
	at, err := w.c.SetState(t.Context(), busy.ID(), "tool:bash", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !at.StuckSince.IsZero() {
		t.Fatalf("stuck at its own boundary: %+v", at)
	}
	var stuck wire.Session
	eventually(t, "the busy session shows as stuck", func() bool {
		stuck = w.row(busy.ID())
		return !stuck.StuckSince.IsZero()
	})
	if stuck.StuckReason != wire.StuckBusy || stuck.State != wire.StateBusy || stuck.Status != "tool:bash" {
		t.Fatalf("stuck row: reason %q state %q status %q", stuck.StuckReason, stuck.State, stuck.Status)
	}
	if stuck.StuckSince.Before(before.Add(-time.Second)) || stuck.StuckSince.After(time.Now()) {
		t.Fatalf("stuck since %v, want the last boundary (after %v)", stuck.StuckSince, before)
	}
	if stuck.StuckSeconds < 0 {
		t.Fatalf("stuck_seconds %d", stuck.StuckSeconds)
	}
	// The idle session was attached before the busy one's last report.
	if r := w.row(idle.ID()); !r.StuckSince.IsZero() || r.StuckReason != "" {
		t.Fatalf("idle session marked stuck: %+v", r)
	}
	// A boundary (the same status again) resets the stall.
	again, err := w.c.SetState(t.Context(), busy.ID(), "tool:bash", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !again.StuckSince.IsZero() {
		t.Fatalf("still stuck after a boundary: %+v", again)
	}
	if r := w.row(busy.ID()); !r.StuckSince.IsZero() && !r.StuckSince.After(stuck.StuckSince) {
		t.Fatalf("the old stall survived the boundary: since %v, was %v", r.StuckSince, stuck.StuckSince)
	}
}

// A session that leaves a steer waiting longer than the threshold shows
// as stuck for waiting steers, even idle, since the oldest one was sent;
// reading (acking) it moves the mark to the next; reading all clears it; a
// queue message waiting is no stall.
func TestStuckWhenSteersWait(t *testing.T) {
	w := newWorld(t, stuckAfter(0, 300*time.Millisecond))
	slow := w.attach("slow", func(o *intercom.AttachOptions) { o.Status = "idle"; o.NoDeliver = true })
	peer := w.attach("peer")
	steer := func(r *wire.SendRequest) { r.Delivery = wire.DeliverySteer }
	w.send(peer, slow.ID(), "later", func(r *wire.SendRequest) { r.Delivery = wire.DeliveryQueue })
	first := w.send(peer, slow.ID(), "look at this", steer)
	second := w.send(peer, slow.ID(), "and this", steer)
	msgs, err := w.c.Peek(t.Context(), slow.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	sent := map[string]time.Time{}
	for _, m := range msgs {
		sent[m.ID] = m.SentAt
	}
	var stuck wire.Session
	eventually(t, "the session leaving a steer waiting shows as stuck", func() bool {
		stuck = w.row(slow.ID())
		return !stuck.StuckSince.IsZero()
	})
	if stuck.StuckReason != wire.StuckSteers || stuck.State != wire.StateIdle || !stuck.StuckSince.Equal(sent[first.ID]) {
		t.Fatalf("stuck row: reason %q state %q since %v, want since %v (the first steer)", stuck.StuckReason, stuck.State, stuck.StuckSince, sent[first.ID])
	}
	if _, err := w.c.Ack(t.Context(), slow.ID(), first.ID); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the mark moves to the next waiting steer", func() bool {
		return w.row(slow.ID()).StuckSince.Equal(sent[second.ID])
	})
	if _, err := w.c.Ack(t.Context(), slow.ID(), second.ID); err != nil {
		t.Fatal(err)
	}
	eventually(t, "reading the steers clears the mark", func() bool { return w.row(slow.ID()).StuckSince.IsZero() })
	if r := w.row(slow.ID()); r.Queued != 1 {
		t.Fatalf("queued %d, want the queue message still waiting", r.Queued)
	}
}

// A steer stored before a broker restart still counts from when it was
// sent: the next broker finds it in the store (the ledger's scan at open)
// once the holder has reconnected.
func TestStuckSteersCountAcrossRestart(t *testing.T) {
	h := newHome(t)
	b := h.start(stuckAfter(0, time.Hour))
	c := h.client()
	slow, err := c.Attach(t.Context(), intercom.AttachOptions{Name: "slow", Cwd: "/proj", Status: "idle", NoDeliver: true})
	if err != nil {
		t.Fatal(err)
	}
	peer, err := c.Attach(t.Context(), intercom.AttachOptions{Name: "peer", Cwd: "/proj"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Send(t.Context(), wire.SendRequest{From: peer.ID(), To: slow.ID(), Text: "still there?", Delivery: wire.DeliverySteer}); err != nil {
		t.Fatal(err)
	}
	msgs, err := c.Peek(t.Context(), slow.ID(), 0)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("peek: %v, %v", msgs, err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	h.start(stuckAfter(0, 200*time.Millisecond))
	c2 := h.client()
	var row wire.Session
	eventually(t, "the steer from before the restart makes the session stuck", func() bool {
		rows, err := c2.List(t.Context(), intercom.ListOptions{Scope: "all", ID: slow.ID()})
		if err != nil || len(rows) != 1 {
			return false
		}
		row = rows[0]
		return !row.StuckSince.IsZero()
	})
	if row.StuckReason != wire.StuckSteers || !row.StuckSince.Equal(msgs[0].SentAt) {
		t.Fatalf("after the restart: reason %q since %v, want steers_waiting since %v", row.StuckReason, row.StuckSince, msgs[0].SentAt)
	}
}

// A steer the wake budget holds for an idle session's next boundary waits
// on purpose: its session does not show as stuck for it, while a session
// whose steer was let through to wake it, and that leaves it unread, does.
func TestStuckNotForSteersTheWakeBudgetHolds(t *testing.T) {
	w := newWorld(t, stuckAfter(0, 300*time.Millisecond), func(o *Options) { o.Wake = &WakeLimits{Budget: 0, Window: time.Hour} })
	idle := func(o *intercom.AttachOptions) { o.Status = "idle"; o.NoDeliver = true }
	held, woken := w.attach("held", idle), w.attach("woken", idle)
	peer, me := w.attach("peer"), w.attach("me")
	bindAgent(t, w.testHome, peer) // an agent: the budget (0) holds its steer
	steer := func(r *wire.SendRequest) { r.Delivery = wire.DeliverySteer }
	if r := w.send(peer, held.ID(), "not now", steer); r.WakeHeld != wire.WakeHeldBudget {
		t.Fatalf("the peer's steer: wake_held %q, want %q", r.WakeHeld, wire.WakeHeldBudget)
	}
	if r := w.send(me, woken.ID(), "from a person", steer); r.WakeHeld != "" {
		t.Fatalf("a person's steer held: %q", r.WakeHeld)
	}
	eventually(t, "the session leaving a waking steer unread shows as stuck", func() bool {
		return w.row(woken.ID()).StuckReason == wire.StuckSteers
	})
	if r := w.row(held.ID()); !r.StuckSince.IsZero() {
		t.Fatalf("a session whose steer the wake budget holds shows as stuck: %+v", r)
	}
}
