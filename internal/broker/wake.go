package broker

import (
	"slices"
	"strings"
	"time"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// The wake budget and the loop breaker: the one place that decides
// whether a waiting steer may wake an idle session. Every harness obeys it,
// since every wake goes through the broker: a Claude Code rewake and a
// Stop hook's hold (intercom wait, WaitInbox), the OpenCode host's watch,
// a Stop hook's hand-over, and a Pi holder's pushes. A message that may not
// wake carries wire.Message.WakeHeld on the way out (inbox, pushes, waits
// see it as not waking) and reaches its reader at its next natural
// boundary: once the session is busy again, its marks are dropped and it
// is an ordinary steer. Decisions are made while the session is idle: when
// a message arrives, and when an idle session's waiting messages are read.

// WakeLimits bound how often peers wake an idle session.
type WakeLimits struct {
	// Budget is how many times peers may wake one idle session per Window
	// (0: peers never wake an idle session). A person's and the session's
	// supervisor's messages always wake and are not counted.
	Budget int
	Window time.Duration
	// LoopRounds: two sessions that wake each other back and forth this
	// many rounds (a round: each wakes the other once) with no person
	// involved are paused: further wake-ups between them are held until a
	// person's message to either resumes them (0: no loop breaker).
	LoopRounds int
}

// DefaultWakeLimits are the limits of a broker whose Options leave Wake
// nil (the config's defaults: wakeBudget, wakeWindowMs, wakeLoopRounds).
var DefaultWakeLimits = WakeLimits{Budget: 6, Window: 10 * time.Minute, LoopRounds: 4}

// wakeBox is the wake state of one session (in its box, under delivery.mu).
type wakeBox struct {
	supervisor string            // its supervisor session, id or name (RegisterRequest.Supervisor)
	decided    map[string]string // message id → why it may not wake ("" it may), while idle
	woken      bool              // a wake was let through since it was last busy
	wakes      []time.Time       // peer wake-ups within the window
}

// pairKey names two sessions, in order.
type pairKey struct{ a, b string }

func pairOf(x, y string) pairKey {
	if x > y {
		x, y = y, x
	}
	return pairKey{x, y}
}

// pairState counts the wake-ups back and forth between two sessions.
type pairState struct {
	alternations int    // wake-ups, each the other way from the one before
	lastWoken    string // who the last one woke
	paused       bool
}

// wakeLimits is the broker's limits, DefaultWakeLimits when none were set.
func (o Options) wakeLimits() WakeLimits {
	if o.Wake != nil {
		return *o.Wake
	}
	return DefaultWakeLimits
}

// markWakeLocked decides, for an idle connected session sid, whether m may
// wake it (once per message while idle) and sets m.WakeHeld to the answer.
func (d *delivery) markWakeLocked(sid string, bx *box, m *wire.Message, now time.Time) {
	m.WakeHeld = ""
	if !bx.idle || !bx.connected || m.Delivery == wire.DeliveryPassive {
		return
	}
	why, ok := bx.wake.decided[m.ID]
	if !ok {
		why = d.decideWakeLocked(sid, bx, m, now)
		bx.wake.decided[m.ID] = why
	}
	m.WakeHeld = why
}

// decideWakeLocked is the rule: a person's and the supervisor's messages
// always wake (a person's also resumes the session's paused pairs); a
// paused pair's do not; once woken, the session takes what else waits
// along; a peer's wake-up counts against the budget of the window and,
// when it goes back the other way, toward the loop breaker.
func (d *delivery) decideWakeLocked(sid string, bx *box, m *wire.Message, now time.Time) string {
	if m.FromPerson {
		d.resumeLocked(sid)
		bx.wake.woken = true
		return ""
	}
	if sup := bx.wake.supervisor; sup != "" && (m.From.ID == sup || m.From.Name == sup) {
		bx.wake.woken = true
		return ""
	}
	from := m.From.ID
	p := d.pairs[pairOf(from, sid)]
	if p != nil && p.paused {
		return wire.WakeHeldLoop
	}
	if bx.wake.woken {
		return ""
	}
	lim := d.wake
	bx.wake.wakes = slices.DeleteFunc(bx.wake.wakes, func(t time.Time) bool { return now.Sub(t) >= lim.Window })
	if len(bx.wake.wakes) >= lim.Budget {
		return wire.WakeHeldBudget
	}
	if lim.LoopRounds > 0 && from != "" && from != sid {
		if p == nil {
			p = &pairState{}
			d.pairs[pairOf(from, sid)] = p
		}
		if p.lastWoken != sid {
			if p.alternations >= 2*lim.LoopRounds {
				p.paused = true
				d.log.Info("loop breaker: wake-ups paused", "between", from, "and", sid, "rounds", lim.LoopRounds)
				return wire.WakeHeldLoop
			}
			p.alternations++
			p.lastWoken = sid
		}
	}
	bx.wake.wakes = append(bx.wake.wakes, now)
	bx.wake.woken = true
	return ""
}

// resumeLocked forgets the wake-up counts of every pair sid is in (a
// person's message): paused pairs wake each other again.
func (d *delivery) resumeLocked(sid string) {
	for k := range d.pairs {
		if k.a == sid || k.b == sid {
			delete(d.pairs, k)
		}
	}
}

// busyLocked records that bx's session is busy: it was woken, or reached
// a natural boundary; what was held waits no longer.
func (bx *box) busyLocked() {
	bx.wake.woken = false
	clear(bx.wake.decided)
}

// wakePaused maps each session to the sessions whose wake-ups with it the
// loop breaker paused.
func (d *delivery) wakePaused() map[string][]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out map[string][]string
	for k, p := range d.pairs {
		if p.paused {
			if out == nil {
				out = map[string][]string{}
			}
			out[k.a] = append(out[k.a], k.b)
			out[k.b] = append(out[k.b], k.a)
		}
	}
	return out
}

// wakePausedNames is a row's WakePaused: ids by their targets, sorted,
// comma-separated ("" for none).
func wakePausedNames(ids []string, targets map[string]string) string {
	if len(ids) == 0 {
		return ""
	}
	names := make([]string, 0, len(ids))
	for _, id := range ids {
		if n := targets[id]; n != "" {
			names = append(names, n)
		} else {
			names = append(names, id)
		}
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// wakeHeld is why message id may not wake sid, as decided ("" when it may,
// or nothing was decided).
func (d *delivery) wakeHeld(sid, id string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if bx := d.boxes[sid]; bx != nil {
		return bx.wake.decided[id]
	}
	return ""
}

// wakeHolding reports whether sid, idle, has waiting messages the wake
// budget or the loop breaker keeps from waking it: steers that wait by the
// broker's own decision, which do not make it stuck (stuck.go).
func (d *delivery) wakeHolding(sid string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	bx := d.boxes[sid]
	if bx == nil || !bx.idle {
		return false
	}
	for _, why := range bx.wake.decided {
		if why != "" {
			return true
		}
	}
	return false
}

// forgetWakeLocked drops what was decided for acknowledged message id.
func (bx *box) forgetWakeLocked(id string) { delete(bx.wake.decided, id) }
