package broker

import (
	"cmp"
	"sort"
	"sync"
	"time"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// Asks: reply obligations. An ask is made by a send with expects_reply; it
// ends when its reply is stored, when it times out, when either side goes
// away, or when the asker stops waiting. Its waiter (the asker's wait
// subject) is told how it ended (wire.AskEvent).

// defaultAskTimeout is an ask's life when the request names none.
const defaultAskTimeout = 2 * time.Minute

// ask is an unresolved reply obligation.
type ask struct {
	id, from, to string
	fromName     string
	fromCwd      string
	text         string
	waiter       string // subject of the waiting asker, "" when nobody waits
	sentAt       time.Time
	expires      time.Time
	timer        *taskTimer
	// away: its target detached without ending; awayTimer ends the ask
	// when the resume grace passes first (asks_resume.go).
	away      bool
	awayTimer *taskTimer
}

// askTable holds the unresolved asks. Lock order: sessionTable.mu, then
// askTable.mu, then delivery.mu (settle's callback) or routeTable.mu
// (failIf's test); it never calls out otherwise.
type askTable struct {
	mu      sync.Mutex
	byID    map[string]*ask
	tasks   *tasks
	publish func(subject string, v any)
	grace   time.Duration // the resume grace (asks_resume.go)
}

func newAskTable(t *tasks, publish func(string, any), grace time.Duration) *askTable {
	return &askTable{byID: map[string]*ask{}, tasks: t, publish: publish, grace: grace}
}

func askTimeout(ms int64) time.Duration {
	if ms <= 0 {
		return defaultAskTimeout
	}
	return time.Duration(ms) * time.Millisecond
}

// add registers a, ending it with "timeout" after timeout.
func (t *askTable) add(a *ask, timeout time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.addLocked(a, timeout)
}

func (t *askTable) addLocked(a *ask, timeout time.Duration) {
	a.expires = time.Now().Add(timeout)
	a.timer = t.tasks.After(timeout, func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.byID[a.id] == a {
			t.endLocked(a, "timeout", "")
		}
	})
	t.byID[a.id] = a
}

// endLocked tells a's waiter why it ended (reason "" tells nobody) and
// retires it.
func (t *askTable) endLocked(a *ask, reason, why string) {
	if a.waiter != "" && reason != "" {
		t.publish(a.waiter, wire.AskEvent{AskID: a.id, Reason: reason, Error: why})
	}
	a.timer.Stop()
	a.awayTimer.Stop()
	delete(t.byID, a.id)
}

// busy refuses a second waiting ask from session from.
func (t *askTable) busy(from string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, a := range t.byID {
		if a.from == from && a.waiter != "" {
			return wire.Errorf(wire.CodeAskBusy, "Already waiting for a reply (ask %s to %s)", a.id, a.to)
		}
	}
	return nil
}

// waiting reports whether ask id has a waiter (its reply goes there).
func (t *askTable) waiting(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	a := t.byID[id]
	return a != nil && a.waiter != ""
}

// settle ends the ask that a message from replier to asker answers (its
// reply_to), if there is one. While the ask is still held, handOver is
// called with its waiter subject ("" when nobody waits).
func (t *askTable) settle(replyTo, replier, asker string, handOver func(waiter string)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	a := t.byID[replyTo]
	if a == nil || a.from != asker || a.to != replier {
		return
	}
	if handOver != nil {
		handOver(a.waiter)
	}
	t.endLocked(a, "", "")
}

// fail ends ask id, telling its waiter reason (and the error why).
func (t *askTable) fail(id, reason, why string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if a := t.byID[id]; a != nil {
		t.endLocked(a, reason, why)
	}
}

// cancel withdraws ask id of session sid (its asker stopped waiting).
func (t *askTable) cancel(sid, id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if a := t.byID[id]; a != nil && a.from == sid {
		t.endLocked(a, "", "")
	}
}

// retireOf ends the obligations of a session that ended for good: its own
// asks are withdrawn (a waiting asker is told asker_disconnected); asks to
// it fail with peer_disconnected.
func (t *askTable) retireOf(sid string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.askerGoneLocked(sid)
	for _, a := range t.byID {
		if a.to == sid {
			t.endLocked(a, "peer_disconnected", "")
		}
	}
}

// detachedOf handles a session that detached without ending: its own asks
// are withdrawn as in retireOf; asks to it wait for it to resume
// (targetAwayLocked).
func (t *askTable) detachedOf(sid string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.askerGoneLocked(sid)
	t.targetAwayLocked(sid)
}

// askerGoneLocked withdraws the asks of session sid, which went away: a
// process still waiting for one of them (an `intercom --session sid ask`
// whose session's holder left) learns it at once, not at its timeout.
func (t *askTable) askerGoneLocked(sid string) {
	for _, a := range t.byID {
		if a.from == sid {
			t.endLocked(a, "asker_disconnected", "the asking session "+sid+" disconnected; its ask is withdrawn")
		}
	}
}

// failIf fails with peer_disconnected every ask for which gone is true.
func (t *askTable) failIf(gone func(a *ask) bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, a := range t.byID {
		if gone(a) {
			t.endLocked(a, "peer_disconnected", "")
		}
	}
}

// waitFor makes subject the waiter of ask id from asker to target, creating
// the ask when this broker does not know it (it restarted since): text and
// timeout describe it then. It returns the ask, or false when the ask
// belongs to another session.
func (t *askTable) waitFor(id string, asker, target wire.Peer, text string, timeout time.Duration, subject string) (*ask, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	a := t.byID[id]
	if a == nil {
		a = &ask{id: id, from: asker.ID, to: target.ID, fromName: asker.Name, fromCwd: asker.Cwd, text: text, sentAt: time.Now().UTC()}
		t.addLocked(a, timeout)
	} else if a.from != asker.ID {
		return nil, false
	}
	a.waiter = subject
	return a, true
}

// retire ends a if it is still held.
func (t *askTable) retire(a *ask) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byID[a.id] == a {
		t.endLocked(a, "", "")
	}
}

// pendingTo lists the asks to session sid, oldest first; targets names the
// askers.
func (t *askTable) pendingTo(sid string, targets func(id string) string) []wire.PendingAsk {
	t.mu.Lock()
	var mine []ask
	for _, a := range t.byID {
		if a.to == sid {
			mine = append(mine, *a)
		}
	}
	t.mu.Unlock()
	out := make([]wire.PendingAsk, 0, len(mine))
	for _, a := range mine {
		out = append(out, wire.PendingAsk{
			AskID: a.id, From: wire.Peer{ID: a.from, Name: a.fromName, Cwd: a.fromCwd},
			FromTarget: cmp.Or(targets(a.from), a.fromName), Text: a.text, SentAt: a.sentAt, ExpiresAt: a.expires,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].SentAt.Before(out[j].SentAt) })
	return out
}

// countsTo returns how many asks each session is asked.
func (t *askTable) countsTo() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := map[string]int{}
	for _, a := range t.byID {
		n[a.to]++
	}
	return n
}

// involves reports whether an unresolved ask involves session sid.
func (t *askTable) involves(sid string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, a := range t.byID {
		if a.from == sid || a.to == sid {
			return true
		}
	}
	return false
}

// count is the number of unresolved asks (stats).
func (t *askTable) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byID)
}
