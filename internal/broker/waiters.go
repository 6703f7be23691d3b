package broker

import (
	"encoding/json"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Inbox waiters (intercom wait, inbox --wait) and delivery timelines.

const maxTraces = 100000

type trace struct {
	pushed, fetched []time.Time
}

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

func (b *Broker) traceLocked(id string) *trace {
	t := b.traces[id]
	if t == nil {
		if len(b.traces) >= maxTraces {
			for k := range b.traces {
				delete(b.traces, k)
				break
			}
		}
		t = &trace{}
		b.traces[id] = t
	}
	return t
}

func traceKey(id string) string { return "trace/" + id }

// storedTrace is the timeline kept after an ack.
type storedTrace struct {
	From    wire.Peer   `json:"from"`
	To      string      `json:"to"`
	Stored  time.Time   `json:"stored_at"`
	Pushed  []time.Time `json:"pushed_at,omitempty"`
	Fetched []time.Time `json:"fetched_at,omitempty"`
	Acked   time.Time   `json:"acked_at"`
}

// traceOf answers `intercom trace`.
func (b *Broker) traceOf(req wire.TraceRequest) (*wire.Trace, error) {
	out := &wire.Trace{ID: req.ID}
	found := false
	err := b.st.View(func(txn *store.Txn) error {
		if v, err := store.Get(txn, traceKey(req.ID)); err == nil {
			var st storedTrace
			if json.Unmarshal(v, &st) == nil {
				acked := st.Acked
				out.From, out.To, out.Stored, out.Pushed, out.Fetched, out.Acked = st.From, st.To, st.Stored, st.Pushed, st.Fetched, &acked
				out.State, found = "acked", true
			}
			return nil
		}
		key, err := store.Get(txn, midxKey(req.ID))
		if err != nil {
			return nil
		}
		v, err := store.Get(txn, string(key))
		if err != nil {
			return nil
		}
		var m wire.Message
		if json.Unmarshal(v, &m) == nil {
			out.From, out.To, out.Stored, out.State, found = m.From, m.To, m.SentAt, "stored", true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, wire.Errorf(wire.CodeNotFound, "no message %q (unknown, or acknowledged more than 7 days ago)", req.ID)
	}
	if out.State == "stored" {
		b.mu.Lock()
		if t := b.traces[req.ID]; t != nil {
			out.Pushed, out.Fetched = append([]time.Time(nil), t.pushed...), append([]time.Time(nil), t.fetched...)
		}
		b.mu.Unlock()
		switch {
		case len(out.Pushed) > 0:
			out.State = "pushed"
		case len(out.Fetched) > 0:
			out.State = "fetched"
		}
	}
	return out, nil
}

// keepTrace writes the delivery timeline of a message being acknowledged.
func (b *Broker) keepTrace(txn *store.Txn, id string, key []byte) error {
	v, err := store.Get(txn, string(key))
	if err != nil {
		return nil
	}
	var m wire.Message
	if json.Unmarshal(v, &m) != nil {
		return nil
	}
	st := storedTrace{From: m.From, To: m.To, Stored: m.SentAt, Acked: time.Now().UTC()}
	b.mu.Lock()
	if t := b.traces[id]; t != nil {
		st.Pushed, st.Fetched = append([]time.Time(nil), t.pushed...), append([]time.Time(nil), t.fetched...)
	}
	b.mu.Unlock()
	data, _ := json.Marshal(st)
	return txn.SetEntry(badgerEntry(traceKey(id), string(data), 7*24*time.Hour))
}
