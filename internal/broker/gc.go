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

// armSweep schedules the next sweep.
func (b *Broker) armSweep() {
	if b.opts.ForgetAfter <= 0 {
		return
	}
	b.tasks.After(b.sweepEvery(), b.sweep)
}

// sweep forgets the sessions that qualify and re-arms itself.
func (b *Broker) sweep() {
	now := time.Now()
	for _, s := range b.sessions.forgettable(now, b.opts.ForgetAfter) {
		if b.keepsState(s.ID) {
			b.sessions.markMailed(s.ID) // it has state; never a candidate again
			continue
		}
		if !b.sessions.forgetIdle(s.ID, now, b.opts.ForgetAfter) {
			continue
		}
		b.sends.forgetTarget(s.ID)
		if err := b.dropInbox(s.ID); err != nil {
			b.log.Warn("forget idle session", "id", s.ID, "err", err)
		}
		b.log.Info("session forgotten", "id", s.ID, "name", s.Name, "reason", "never held a message", "disconnected_for", now.Sub(s.LastSeen).Round(time.Second))
	}
	b.armSweep()
}

// idleLocked reports whether s may be forgotten at now: disconnected for
// after, never mailed, lasting, and in no ask.
func (t *sessionTable) idleLocked(s *session, now time.Time, after time.Duration) bool {
	return !s.Connected && !s.Ephemeral && !s.mailed && now.Sub(s.LastSeen) >= after && !t.asks.involves(s.ID)
}

// forgettable returns copies of the sessions that may be forgotten at now.
func (t *sessionTable) forgettable(now time.Time, after time.Duration) []session {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []session
	for _, s := range t.byID {
		if t.idleLocked(s, now, after) {
			out = append(out, *s)
		}
	}
	return out
}

// markMailed keeps session sid for good.
func (t *sessionTable) markMailed(sid string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.byID[sid]; s != nil {
		s.mailed = true
	}
}

// forgetIdle forgets session sid if it still may be forgotten.
func (t *sessionTable) forgetIdle(sid string, now time.Time, after time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.byID[sid]
	if s == nil || !t.idleLocked(s, now, after) {
		return false
	}
	t.forgetLocked(s)
	return true
}

// keepsState reports whether the store holds mail, a topic subscription or
// a topic record of session sid (or cannot tell).
func (b *Broker) keepsState(sid string) bool {
	keep := true
	_ = b.st.View(func(txn *store.Txn) error {
		keep = txn.HasInbox(sid) || txn.HasTopicState(sid)
		return nil
	})
	return keep
}
