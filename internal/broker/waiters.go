package broker

import (
	"encoding/json"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// Inbox waiters (intercom wait, inbox --wait).

// wakeWaitersLocked releases everyone waiting for mail for sid.
func (b *Broker) wakeWaitersLocked(sid string) {
	for _, ch := range b.waiters[sid] {
		close(ch)
	}
	delete(b.waiters, sid)
}

// onInboxWait answers when sid has something deliverable, or at the timeout.
func (b *Broker) onInboxWait(m *nats.Msg) {
	var req wire.InboxWaitRequest
	if err := json.Unmarshal(m.Data, &req); err != nil || req.SessionID == "" {
		respond(m, wire.Reply[wire.InboxWaitReply]{Error: wire.Errorf(wire.CodeBadRequest, "inboxwait: session required")})
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
		for {
			ch := make(chan struct{})
			b.mu.Lock()
			b.waiters[req.SessionID] = append(b.waiters[req.SessionID], ch)
			b.mu.Unlock()
			// Registered before looking, so nothing slips between.
			if b.inboxPeek(req.SessionID, req.WakeOnly) {
				respond(m, wire.Reply[wire.InboxWaitReply]{Result: &wire.InboxWaitReply{Ready: true}})
				return
			}
			select {
			case <-ch:
				continue // something changed: look again
			case <-deadline.C:
				b.mu.Lock()
				list := b.waiters[req.SessionID]
				for i, c := range list {
					if c == ch {
						b.waiters[req.SessionID] = append(list[:i], list[i+1:]...)
						break
					}
				}
				b.mu.Unlock()
				respond(m, wire.Reply[wire.InboxWaitReply]{Result: &wire.InboxWaitReply{Ready: false}})
				return
			}
		}
	}()
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
