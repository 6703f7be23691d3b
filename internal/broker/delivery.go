package broker

import (
	"log/slog"
	"sync"
	"time"

	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Delivery: handing stored messages to a session's holder. Each holder has
// its own delivery subject (wire.Deliver with its token). A message is
// pushed when it is eligible (eligible); a holder that attaches gets its
// backlog first (flush), and messages arriving meanwhile are picked up by
// the flush in order (dirty).

// box is the delivery state of one session.
type box struct {
	connected bool // a connection registered the session
	holder    bool // it wants pushes on wire.Deliver(id, token)
	batches   bool // it takes several messages in one push (delivery_batch.go)
	idle      bool // queued messages may be delivered now
	token     string
	inflight  map[string]bool      // pushed to the holder, not yet acked
	held      map[string]time.Time // replace-mode messages held until then
	dropped   map[string]bool      // replaced, deletion in flight
	claimed   map[string]bool      // replies handed to an ask waiter
	flushing  bool
	dirty     bool
	wake      wakeBox // the wake budget's state (wake.go)
}

func newBox() *box {
	return &box{inflight: map[string]bool{}, held: map[string]time.Time{}, dropped: map[string]bool{}, claimed: map[string]bool{},
		wake: wakeBox{decided: map[string]string{}}}
}

// delivery holds every session's box. Lock order: it is taken inside
// sessionTable.mu, sendState.mu and askTable.mu, and takes waiterTable.mu
// and traceTable.mu inside its own; it never calls the others.
type delivery struct {
	mu      sync.Mutex
	boxes   map[string]*box
	st      *store.Store
	log     *slog.Logger
	tasks   *tasks
	waiters *waiterTable
	traces  *traceTable
	publish func(subject string, v any)
	wake    WakeLimits             // the wake budget and loop breaker (wake.go)
	pairs   map[pairKey]*pairState // wake-ups back and forth between two sessions
}

func newDelivery(st *store.Store, log *slog.Logger, t *tasks, w *waiterTable, tr *traceTable, publish func(string, any), wake WakeLimits) *delivery {
	return &delivery{boxes: map[string]*box{}, st: st, log: log, tasks: t, waiters: w, traces: tr, publish: publish,
		wake: wake, pairs: map[pairKey]*pairState{}}
}

// add makes sid's box; every known session has one.
func (d *delivery) add(sid string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.boxLocked(sid)
}

// boxLocked returns sid's box, made if missing.
func (d *delivery) boxLocked(sid string) *box {
	bx := d.boxes[sid]
	if bx == nil {
		bx = newBox()
		d.boxes[sid] = bx
	}
	return bx
}

// attach records a new registration of sid: a holder (with its token) gets
// every unacked message again, its backlog first. The flush is marked
// running now, so a send arriving before it starts is not pushed ahead of
// older stored messages (it sets dirty and the flush picks it up).
// supervisor is the session's supervisor ("" for not known here): its
// messages always wake it.
func (d *delivery) attach(sid string, holder bool, token string, idle bool, supervisor string, batches bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	bx := d.boxLocked(sid)
	bx.connected, bx.holder, bx.token, bx.idle, bx.batches = true, holder, token, idle, batches
	if supervisor != "" { // another registration of it (a hook's holder) may not know
		bx.wake.supervisor = supervisor
	}
	bx.inflight, bx.claimed = map[string]bool{}, map[string]bool{}
	if !holder {
		return
	}
	if bx.flushing {
		bx.dirty = true
		return
	}
	bx.flushing = true
	if !d.tasks.Go(func() { d.flushLoop(sid, bx) }) {
		bx.flushing = false
	}
}

// detach records that sid has no connection any more.
func (d *delivery) detach(sid string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if bx := d.boxes[sid]; bx != nil {
		bx.connected, bx.holder, bx.idle = false, false, false
		bx.inflight, bx.claimed = map[string]bool{}, map[string]bool{}
	}
}

// remove forgets sid's box (the session was forgotten).
func (d *delivery) remove(sid string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.boxes, sid)
	d.resumeLocked(sid) // its wake-up counts go with it
}

// setIdle records whether sid is idle; it reports whether it just became
// so (its queued messages are deliverable now).
func (d *delivery) setIdle(sid string, idle bool) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	bx := d.boxes[sid]
	if bx == nil {
		return false
	}
	was := bx.idle
	bx.idle = idle
	if !idle {
		bx.busyLocked()
	}
	return idle && !was
}

// eligible reports whether m may be pushed to bx now.
func (bx *box) eligible(m *wire.Message, now time.Time) bool {
	if bx.inflight[m.ID] || bx.dropped[m.ID] || bx.claimed[m.ID] {
		return false
	}
	if t, ok := bx.held[m.ID]; ok && now.Before(t) {
		return false
	}
	if m.Delivery == wire.DeliveryQueue && !bx.idle {
		return false
	}
	return true
}

// push hands msgs, just stored for sid, to its holder as far as they are
// eligible, and wakes sid's waiters.
func (d *delivery) push(sid string, msgs ...wire.Message) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if bx := d.boxes[sid]; bx != nil {
		d.pushLocked(sid, bx, msgs)
	} else {
		d.waiters.wake(sid)
	}
}

// pushIf is push of one message, done only if ok (asked under the lock)
// says so.
func (d *delivery) pushIf(sid string, m wire.Message, ok func() bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if bx := d.boxes[sid]; bx != nil && ok() {
		d.pushLocked(sid, bx, []wire.Message{m})
	}
}

// pushLocked sends eligible messages to bx's holder, unless a flush is
// running (it will pick them up, in order).
func (d *delivery) pushLocked(sid string, bx *box, msgs []wire.Message) {
	now := time.Now()
	for i := range msgs {
		d.markWakeLocked(sid, bx, &msgs[i], now) // an arrival while idle: may it wake?
	}
	if bx.connected && bx.holder {
		d.waiters.note(sid, msgs)
	}
	d.waiters.wake(sid)
	if !bx.connected || !bx.holder {
		return
	}
	if bx.flushing {
		bx.dirty = true
		return
	}
	d.pushManyLocked(sid, bx, eligibleOf(bx, msgs, now), now)
}

// pushOneLocked hands one message to bx's holder and records when.
func (d *delivery) pushOneLocked(sid string, bx *box, m *wire.Message, now time.Time) {
	d.handOnLocked(sid, bx, m, now)
	d.publish(wire.Deliver(sid, bx.token), m)
}

// handOnLocked records that m is being pushed to bx's holder.
func (d *delivery) handOnLocked(sid string, bx *box, m *wire.Message, now time.Time) {
	d.markWakeLocked(sid, bx, m, now)
	bx.inflight[m.ID] = true
	d.traces.record(m, now, false)
}

// flush pushes every eligible stored message of sid to its holder, oldest
// first.
func (d *delivery) flush(sid string) {
	d.mu.Lock()
	bx := d.boxes[sid]
	if bx == nil || !bx.connected || !bx.holder || bx.flushing {
		if bx != nil && bx.flushing {
			bx.dirty = true
		}
		d.mu.Unlock()
		return
	}
	bx.flushing = true
	d.mu.Unlock()
	d.flushLoop(sid, bx)
}

// flushAfter flushes sid once d has passed (a held message is due).
func (d *delivery) flushAfter(sid string, wait time.Duration) {
	d.tasks.After(wait, func() { d.flush(sid) })
}

// flushLoop is flush once bx.flushing has been set by the caller.
// Concurrent sends during a flush set dirty and are picked up by a rescan,
// so order is kept.
func (d *delivery) flushLoop(sid string, bx *box) {
	for {
		msgs, err := scanInbox(d.st, sid, 0)
		d.mu.Lock()
		if err != nil {
			d.log.Warn("scan inbox", "session", sid, "err", err)
		}
		if d.boxes[sid] != bx || !bx.connected {
			bx.flushing, bx.dirty = false, false
			d.mu.Unlock()
			return
		}
		now := time.Now()
		var next time.Time
		for i := range msgs {
			if t, ok := bx.held[msgs[i].ID]; ok && now.Before(t) && (next.IsZero() || t.Before(next)) {
				next = t
			}
		}
		d.pushManyLocked(sid, bx, eligibleOf(bx, msgs, now), now)
		if bx.dirty {
			bx.dirty = false
			d.mu.Unlock()
			continue
		}
		bx.flushing = false
		d.mu.Unlock()
		if !next.IsZero() {
			d.flushAfter(sid, time.Until(next)+time.Millisecond)
		}
		return
	}
}

// deliverable filters sid's stored messages (msgs, in order) to those that
// may be handed over now: steer and passive, queued ones when the session
// is idle (or has no connection), none held by replace-mode coalescing or
// claimed by an ask waiter; at most limit (0: all). With recordFetch each
// is recorded as fetched.
func (d *delivery) deliverable(sid string, msgs []wire.Message, limit int, recordFetch bool) []wire.Message {
	d.mu.Lock()
	defer d.mu.Unlock()
	bx := d.boxes[sid]
	if bx == nil {
		bx = newBox() // forgotten meanwhile: nothing held or claimed
	}
	now := time.Now()
	out := []wire.Message{}
	for i := range msgs {
		m := &msgs[i]
		if bx.dropped[m.ID] || bx.claimed[m.ID] {
			continue
		}
		if t, ok := bx.held[m.ID]; ok && now.Before(t) {
			continue
		}
		if m.Delivery == wire.DeliveryQueue && bx.connected && !bx.idle {
			continue
		}
		if recordFetch {
			d.traces.record(m, now, true)
		}
		d.markWakeLocked(sid, bx, m, now) // read while idle: may it wake?
		out = append(out, *m)
		if limit > 0 && len(out) >= limit {
			break
		}
	}
	return out
}

// supersede marks message id of sid replaced by a newer one, unless it was
// pushed already (then it stays); it reports whether it was marked.
func (d *delivery) supersede(sid, id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	bx := d.boxes[sid]
	if bx == nil || bx.inflight[id] {
		return false
	}
	bx.dropped[id] = true
	return true
}

// hold keeps message id of sid from delivery until until (replace-mode
// coalescing).
func (d *delivery) hold(sid, id string, until time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if bx := d.boxes[sid]; bx != nil {
		bx.held[id] = until
	}
}

// heldUntil reports when message id of sid is due, if it is held.
func (d *delivery) heldUntil(sid, id string) (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if bx := d.boxes[sid]; bx != nil {
		t, ok := bx.held[id]
		return t, ok
	}
	return time.Time{}, false
}

// unsent forgets message id of sid, not stored after all, and restores the
// message it would have superseded (replaced, "" for none).
func (d *delivery) unsent(sid, id, replaced string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if bx := d.boxes[sid]; bx != nil {
		delete(bx.held, id)
		delete(bx.dropped, replaced)
		delete(bx.inflight, id)
	}
	d.traces.forget(id)
}

// replacedGone forgets a superseded message of sid, deleted by the commit
// of its successor.
func (d *delivery) replacedGone(sid, id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if bx := d.boxes[sid]; bx != nil {
		delete(bx.dropped, id)
		delete(bx.held, id)
	}
}

// claim marks message id of sid handed to an ask waiter; false when it
// was already.
func (d *delivery) claim(sid, id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	bx := d.boxes[sid]
	if bx == nil || bx.claimed[id] {
		return false
	}
	bx.claimed[id] = true
	return true
}

// acked forgets acknowledged messages of sid.
func (d *delivery) acked(sid string, ids []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	bx := d.boxes[sid]
	for _, id := range ids {
		d.traces.forget(id)
		if bx != nil {
			delete(bx.inflight, id)
			delete(bx.claimed, id)
			delete(bx.held, id)
			bx.forgetWakeLocked(id)
		}
	}
}

// scanInbox reads up to limit (0: all) stored messages of sid in order.
func scanInbox(st *store.Store, sid string, limit int) ([]wire.Message, error) {
	var out []wire.Message
	err := st.View(func(txn *store.Txn) error {
		return txn.ScanInbox(sid, func(_ store.Slot, m wire.Message) bool {
			out = append(out, m)
			return limit == 0 || len(out) < limit
		})
	})
	return out, err
}
