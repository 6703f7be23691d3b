package broker

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// Inbox waiters (intercom wait, inbox --wait).

// maxInboxWait caps one wait request.
const maxInboxWait = time.Hour

// waiter is one intercom wait / inbox --wait.
type waiter struct {
	ch       chan struct{} // closed when something changed for the session
	wakeOnly bool
	arrived  []wire.Message // waking messages pushed to a delivering holder meanwhile
}

// waiterTable holds the waits of every session. It is a leaf: taken inside
// delivery.mu, it calls nothing.
type waiterTable struct {
	mu    sync.Mutex
	bySID map[string][]*waiter
}

func newWaiterTable() *waiterTable { return &waiterTable{bySID: map[string][]*waiter{}} }

// add registers a wait for sid.
func (t *waiterTable) add(sid string, wakeOnly bool) *waiter {
	w := &waiter{ch: make(chan struct{}), wakeOnly: wakeOnly}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.bySID[sid] = append(t.bySID[sid], w)
	return w
}

// drop removes a wait that ended.
func (t *waiterTable) drop(sid string, w *waiter) {
	t.mu.Lock()
	defer t.mu.Unlock()
	list := t.bySID[sid]
	for i, x := range list {
		if x == w {
			t.bySID[sid] = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(t.bySID[sid]) == 0 {
		delete(t.bySID, sid)
	}
}

// arrivals returns what w was told arrived.
func (t *waiterTable) arrivals(w *waiter) []wire.Message {
	t.mu.Lock()
	defer t.mu.Unlock()
	return w.arrived
}

// wake releases everyone waiting for mail for sid.
func (t *waiterTable) wake(sid string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, w := range t.bySID[sid] {
		close(w.ch)
	}
	delete(t.bySID, sid)
}

// note tells sid's waiters about messages arriving for its delivering
// holder (attach): the holder may take them before a waiter looks, and the
// arrival must still end the wait.
func (t *waiterTable) note(sid string, msgs []wire.Message) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, w := range t.bySID[sid] {
	next:
		for _, m := range msgs {
			if w.wakeOnly && !m.Wakes() {
				continue
			}
			for _, a := range w.arrived {
				if a.ID == m.ID {
					continue next
				}
			}
			w.arrived = append(w.arrived, m)
		}
	}
}

// count is the number of waits (stats).
func (t *waiterTable) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, l := range t.bySID {
		n += len(l)
	}
	return n
}

// onInboxWait answers when sid has something deliverable (or a waking
// message arrived for its delivering holder), or at the timeout. A wait
// still open when the broker stops ends unanswered: the client asks the
// next broker.
func (b *Broker) onInboxWait(m *nats.Msg) {
	var req wire.InboxWaitRequest
	if json.Unmarshal(m.Data, &req) != nil {
		req = wire.InboxWaitRequest{} // refused below, as a wait for no session
	}
	if err := wire.ValidateInboxWait(req); err != nil {
		respond(m, wire.Reply[wire.InboxWaitReply]{Error: toWireError(err)})
		return
	}
	timeout := time.Duration(req.TimeoutMs) * time.Millisecond
	if timeout <= 0 || timeout > maxInboxWait {
		timeout = maxInboxWait
	}
	if !b.sessions.known(req.SessionID) {
		respond(m, wire.Reply[wire.InboxWaitReply]{Error: wire.Errorf(wire.CodeNotFound, "no session with id %q", req.SessionID)})
		return
	}
	b.tasks.Go(func() { b.waitInbox(m, req, timeout) })
}

func (b *Broker) waitInbox(m *nats.Msg, req wire.InboxWaitRequest, timeout time.Duration) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	var arrived []wire.Message
	for {
		w := b.waiters.add(req.SessionID, req.WakeOnly)
		// Registered before looking, so nothing slips between.
		if len(arrived) > 0 || b.inboxPeek(req.SessionID, req.WakeOnly) {
			b.waiters.drop(req.SessionID, w)
			respond(m, wire.Reply[wire.InboxWaitReply]{Result: &wire.InboxWaitReply{Ready: true, Arrived: arrived}})
			return
		}
		select {
		case <-w.ch:
			arrived = b.waiters.arrivals(w)
			continue // something changed: look again
		case <-deadline.C:
			b.waiters.drop(req.SessionID, w)
			respond(m, wire.Reply[wire.InboxWaitReply]{Result: &wire.InboxWaitReply{Ready: false}})
			return
		case <-b.tasks.Done():
			b.waiters.drop(req.SessionID, w)
			return
		}
	}
}

// inboxPeek reports whether sid has a deliverable (waking, if wakeOnly)
// message now.
func (b *Broker) inboxPeek(sid string, wakeOnly bool) bool {
	msgs, err := b.deliverable(sid, 0, false)
	if err != nil {
		return false
	}
	for _, m := range msgs {
		if !wakeOnly || m.Wakes() {
			return true
		}
	}
	return false
}
