package broker

import (
	"time"

	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Stalls: a session is stuck, not busy, when it has reported the same busy
// status (thinking, tool:NAME) for longer than StuckAfter with no boundary
// (a lifecycle report: attach or state), or has left a steer waiting in
// its inbox for longer than StuckSteersAfter. This file is the one place
// that says so; every row the broker hands out (list, status, ui, find,
// --json) is marked by stallRule.mark, and the run owner's --on-stuck
// ladder (internal/runs) reads the mark.

// StallThresholds say when a session is stuck; 0 turns a rule off.
type StallThresholds struct {
	BusyAfter   time.Duration // busy with no boundary
	SteersAfter time.Duration // a steer waiting unread
}

// stallRule marks stuck rows. It reads the ledger (a leaf) under the
// session table's lock.
type stallRule struct {
	StallThresholds
	ledger *ledger
}

// mark sets the stuck fields of row, the public row of s, as of now: the
// earliest start among the rules that hold (since the boundary for a busy
// stall, since the oldest waiting steer was sent for the other).
func (r stallRule) mark(row *wire.Session, s *session, now time.Time) {
	row.StuckSince, row.StuckSeconds, row.StuckReason = time.Time{}, 0, ""
	if !row.Connected || row.Host != "" {
		return
	}
	if r.BusyAfter > 0 && row.State == wire.StateBusy && !s.boundary.IsZero() && now.Sub(s.boundary) >= r.BusyAfter {
		row.StuckSince, row.StuckReason = s.boundary, wire.StuckBusy
	}
	if r.SteersAfter > 0 && r.ledger != nil {
		if oldest := r.ledger.oldestSteer(s.ID); !oldest.IsZero() && now.Sub(oldest) >= r.SteersAfter &&
			(row.StuckSince.IsZero() || oldest.Before(row.StuckSince)) {
			row.StuckSince, row.StuckReason = oldest, wire.StuckSteers
		}
	}
	if !row.StuckSince.IsZero() {
		row.StuckSeconds = int(now.Sub(row.StuckSince) / time.Second)
	}
}

// steerTimes are the send times of the steers stored in each inbox, by
// sequence, and the oldest of them (found again only after it went): what
// says how long the oldest has waited, with no scan per list.
type steerTimes map[string]*steerBox

type steerBox struct {
	sent   map[uint64]time.Time
	oldest time.Time // zero: to be found again
}

func (st steerTimes) stored(at store.Slot, m *wire.Message) {
	if at.Outbox || m.Delivery != wire.DeliverySteer {
		return
	}
	box := st[at.Owner]
	if box == nil {
		box = &steerBox{sent: map[uint64]time.Time{}}
		st[at.Owner] = box
	}
	box.sent[at.Seq] = m.SentAt
	if !box.oldest.IsZero() && m.SentAt.Before(box.oldest) {
		box.oldest = m.SentAt
	}
}

func (st steerTimes) removed(at store.Slot) {
	box := st[at.Owner]
	if box == nil {
		return
	}
	if sent, ok := box.sent[at.Seq]; ok {
		delete(box.sent, at.Seq)
		if !sent.After(box.oldest) {
			box.oldest = time.Time{}
		}
	}
	if len(box.sent) == 0 {
		delete(st, at.Owner)
	}
}

// oldestSteer is the send time of the oldest steer stored for sid, zero
// when none waits.
func (l *ledger) oldestSteer(sid string) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	box := l.steers[sid]
	if box == nil {
		return time.Time{}
	}
	if box.oldest.IsZero() {
		for _, at := range box.sent {
			if box.oldest.IsZero() || at.Before(box.oldest) {
				box.oldest = at
			}
		}
	}
	return box.oldest
}
