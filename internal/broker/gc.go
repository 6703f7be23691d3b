package broker

import (
	"time"

	"github.com/intercom-dev/intercom/internal/store"
)

// Sessions that never held a message pile up otherwise: every finished
// run's child, every MCP health check without an id, every UI that failed
// to start leaves one behind. The broker forgets a session once it has been
// disconnected for Options.ForgetAfter, provided it never had a message in
// its inbox (an offline session with queued mail is always kept, and so is
// one that ever received mail: its owner may resume it), has no topic
// subscription or record, and no ask involves it.

// sweepEvery is how often the broker looks for such sessions.
func (b *Broker) sweepEvery() time.Duration {
	return min(max(b.opts.ForgetAfter/4, 10*time.Millisecond), time.Minute)
}

// armSweepLocked schedules the next sweep.
func (b *Broker) armSweepLocked() {
	if b.opts.ForgetAfter <= 0 || b.closed {
		return
	}
	b.sweepT = time.AfterFunc(b.sweepEvery(), b.sweep)
}

// sweep forgets the sessions that qualify and re-arms itself.
func (b *Broker) sweep() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.sweeping.Add(1)
	defer b.sweeping.Done()
	now := time.Now()
	var candidates []*session
	for _, s := range b.sessions {
		if !s.Connected && !s.Ephemeral && !s.mailed && now.Sub(s.LastSeen) >= b.opts.ForgetAfter && !b.inAskLocked(s.ID) {
			candidates = append(candidates, s)
		}
	}
	b.mu.Unlock()
	for _, s := range candidates {
		if b.keepsState(s.ID) {
			b.mu.Lock()
			s.mailed = true // it has state; never a candidate again
			b.mu.Unlock()
			continue
		}
		b.mu.Lock()
		gone := b.sessions[s.ID] == s && !s.Connected && !s.mailed
		if gone {
			b.forgetLocked(s)
		}
		b.mu.Unlock()
		if gone {
			if err := b.dropInbox(s.ID); err != nil {
				b.log.Warn("forget idle session", "id", s.ID, "err", err)
			}
			b.log.Info("session forgotten", "id", s.ID, "name", s.Name, "reason", "never held a message", "disconnected_for", now.Sub(s.LastSeen).Round(time.Second))
		}
	}
	b.mu.Lock()
	b.armSweepLocked()
	b.mu.Unlock()
}

// inAskLocked reports whether an unresolved ask involves session sid.
func (b *Broker) inAskLocked(sid string) bool {
	for _, a := range b.asks {
		if a.from == sid || a.to == sid {
			return true
		}
	}
	return false
}

// keepsState reports whether the store holds mail, a topic subscription or
// a topic record of session sid (or cannot tell).
func (b *Broker) keepsState(sid string) bool {
	keep := true
	_ = b.st.View(func(txn *store.Txn) error {
		found := false
		txn.Keys(store.InboxPrefix(sid), func(string) bool { found = true; return false })
		for _, prefix := range []string{store.TopicSubsAll, store.TopicRecordsAll} {
			if found {
				break
			}
			txn.Keys(prefix, func(k string) bool {
				found = store.TopicKeyOf(k, sid)
				return !found
			})
		}
		keep = found
		return nil
	})
	return keep
}
