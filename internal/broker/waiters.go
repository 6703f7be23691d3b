package broker

import (
	"encoding/json"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// Inbox waiters (intercom wait, inbox --wait).

// waiter is one intercom wait / inbox --wait.
type waiter struct {
	ch       chan struct{} // closed when something changed for the session
	wakeOnly bool
	arrived  []wire.Message // waking messages pushed to a delivering holder meanwhile
}

// wakeWaitersLocked releases everyone waiting for mail for sid.
func (b *Broker) wakeWaitersLocked(sid string) {
	for _, w := range b.waiters[sid] {
		close(w.ch)
	}
	delete(b.waiters, sid)
}

// noteArrivalsLocked tells s's waiters about messages arriving for a
// delivering holder (attach): the holder may take them before a waiter
// looks, and the arrival must still end the wait.
func (b *Broker) noteArrivalsLocked(s *session, msgs []wire.Message) {
	if !s.Connected || !s.holder {
		return
	}
	for _, w := range b.waiters[s.ID] {
	next:
		for _, m := range msgs {
			if w.wakeOnly && m.Delivery == wire.DeliveryPassive {
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

// onInboxWait answers when sid has something deliverable (or a waking
// message arrived for its delivering holder), or at the timeout.
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
	if timeout <= 0 || timeout > time.Hour {
		timeout = time.Hour
	}
	b.mu.Lock()
	known := b.sessions[req.SessionID] != nil
	b.mu.Unlock()
	if !known {
		respond(m, wire.Reply[wire.InboxWaitReply]{Error: wire.Errorf(wire.CodeNotFound, "no session with id %q", req.SessionID)})
		return
	}
	go func() {
		deadline := time.NewTimer(timeout)
		defer deadline.Stop()
		var arrived []wire.Message
		for {
			w := &waiter{ch: make(chan struct{}), wakeOnly: req.WakeOnly}
			b.mu.Lock()
			b.waiters[req.SessionID] = append(b.waiters[req.SessionID], w)
			b.mu.Unlock()
			// Registered before looking, so nothing slips between.
			if len(arrived) > 0 || b.inboxPeek(req.SessionID, req.WakeOnly) {
				b.dropWaiter(req.SessionID, w)
				respond(m, wire.Reply[wire.InboxWaitReply]{Result: &wire.InboxWaitReply{Ready: true, Arrived: arrived}})
				return
			}
			select {
			case <-w.ch:
				b.mu.Lock()
				arrived = w.arrived
				b.mu.Unlock()
				continue // something changed: look again
			case <-deadline.C:
				b.dropWaiter(req.SessionID, w)
				respond(m, wire.Reply[wire.InboxWaitReply]{Result: &wire.InboxWaitReply{Ready: false}})
				return
			}
		}
	}()
}

func (b *Broker) dropWaiter(sid string, w *waiter) {
	b.mu.Lock()
	defer b.mu.Unlock()
	list := b.waiters[sid]
	for i, x := range list {
		if x == w {
			b.waiters[sid] = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(b.waiters[sid]) == 0 {
		delete(b.waiters, sid)
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
		if !wakeOnly || m.Delivery != wire.DeliveryPassive {
			return true
		}
	}
	return false
}
