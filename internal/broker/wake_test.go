package broker

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// wakeWorld is the delivery state alone, with two idle connected sessions
// a and b (no holders), to drive the wake rule message by message.
type wakeWorld struct {
	t *testing.T
	d *delivery
	n int
}

func newWakeWorld(t *testing.T, lim WakeLimits, sessions ...string) *wakeWorld {
	tk := newTasks()
	t.Cleanup(tk.stop)
	d := newDelivery(nil, slog.New(slog.DiscardHandler), tk, newWaiterTable(), newTraceTable(), func(string, any) {}, lim)
	for _, s := range sessions {
		d.add(s)
		d.attach(s, false, "", true, "", false)
	}
	return &wakeWorld{t: t, d: d}
}

// arrive stores nothing: it is the push of a new message from → to, and
// returns why it may not wake to ("" when it may).
func (w *wakeWorld) arrive(from, to string, mod ...func(*wire.Message)) string {
	w.n++
	m := wire.Message{ID: fmt.Sprintf("m%03d", w.n), From: wire.Peer{ID: from, Name: from}, To: to, Delivery: wire.DeliverySteer}
	for _, f := range mod {
		f(&m)
	}
	w.d.push(to, m)
	return w.d.wakeHeld(to, m.ID)
}

// expect fails unless the next message from → to is decided want ("": it
// wakes to).
func (w *wakeWorld) expect(what, want, from, to string, mod ...func(*wire.Message)) {
	w.t.Helper()
	if why := w.arrive(from, to, mod...); why != want {
		w.t.Fatalf("%s: wake_held %q, want %q", what, why, want)
	}
}

// woken is a wake-up ending in a turn: busy, then idle again.
func (w *wakeWorld) woken(s string) {
	w.d.setIdle(s, false)
	w.d.setIdle(s, true)
}

func TestWakeBudgetHoldsPeerWakesBeyondTheBudget(t *testing.T) {
	t.Parallel()
	w := newWakeWorld(t, WakeLimits{Budget: 3, Window: time.Hour}, "a", "p1", "p2", "p3", "boss", "sup")
	w.d.attach("a", false, "", true, "sup", false)
	for i := range 3 {
		w.expect("a peer wake within the budget", "", fmt.Sprintf("p%d", i+1), "a")
		// A second message while the first one's wake is under way rides
		// along: it is not another wake-up.
		w.expect("a message riding along a wake", "", "p1", "a")
		w.woken("a")
	}
	w.expect("a fourth peer wake in the window", wire.WakeHeldBudget, "p2", "a")
	w.expect("a passive message (never decided: it never wakes)", "", "p3", "a", func(m *wire.Message) { m.Delivery = wire.DeliveryPassive })
	w.expect("the supervisor's message", "", "sup", "a")
	w.woken("a")
	w.expect("a person's message", "", "boss", "a", func(m *wire.Message) { m.FromPerson = true })
	w.woken("a")
	w.expect("after the person's and supervisor's wakes the peers' budget is still spent", wire.WakeHeldBudget, "p1", "a")
	// Busy, the session takes every steer at its next boundary: nothing is
	// held.
	w.d.setIdle("a", false)
	w.expect("a steer to a busy session", "", "p1", "a")
}

func TestWakeBudgetWindowPasses(t *testing.T) {
	t.Parallel()
	w := newWakeWorld(t, WakeLimits{Budget: 1, Window: time.Nanosecond}, "a", "p")
	for range 5 {
		w.expect("a wake with a window that passed", "", "p", "a")
		w.woken("a")
	}
}

func TestLoopBreakerPausesPingPongAndAPersonResumesIt(t *testing.T) {
	t.Parallel()
	const rounds = 3
	w := newWakeWorld(t, WakeLimits{Budget: 100, Window: time.Hour, LoopRounds: rounds}, "a", "b", "c")
	for range rounds {
		w.expect("a waking b within the rounds", "", "a", "b")
		w.woken("b")
		w.expect("b waking a within the rounds", "", "b", "a")
		w.woken("a")
	}
	w.expect("after the rounds, a waking b", wire.WakeHeldLoop, "a", "b")
	w.expect("after the rounds, b waking a", wire.WakeHeldLoop, "b", "a")
	if got := w.d.wakePaused(); len(got["a"]) != 1 || got["a"][0] != "b" || len(got["b"]) != 1 {
		t.Fatalf("paused pairs %v, want a and b", got)
	}
	w.expect("a third session waking a", "", "c", "a")
	w.woken("a")
	w.expect("the person's message", "", "person", "b", func(m *wire.Message) { m.FromPerson = true })
	w.woken("b")
	if got := w.d.wakePaused(); len(got) != 0 {
		t.Fatalf("paused pairs %v after a person's message", got)
	}
	w.expect("b waking a after the person's message", "", "b", "a")
}

// One peer waking another again and again is the budget's business, not a
// loop: only wake-ups back and forth count toward the loop breaker.
func TestLoopBreakerCountsOnlyBackAndForth(t *testing.T) {
	t.Parallel()
	w := newWakeWorld(t, WakeLimits{Budget: 100, Window: time.Hour, LoopRounds: 1}, "a", "b")
	for range 5 {
		w.expect("a one-way wake", "", "a", "b")
		w.woken("b")
	}
	w.expect("the first wake back", "", "b", "a")
	w.woken("a")
	w.expect("a second round", wire.WakeHeldLoop, "a", "b")
}

// Through the real broker: the sender's reply says a steer did not wake,
// a wake-only wait does not end for it, the session's row names the paused
// pair, and the message is still delivered whole at the next boundary.
func TestWakeHeldThroughTheBroker(t *testing.T) {
	t.Parallel()
	w := newWorld(t, func(o *Options) { o.Wake = &WakeLimits{Budget: 10, Window: time.Hour, LoopRounds: 1} })
	ctx := t.Context()
	noDeliver := func(o *intercom.AttachOptions) { o.NoDeliver = true }
	a, b := w.attach("alpha", noDeliver), w.attach("bravo", noDeliver)
	bindAgent(t, w.testHome, a) // agents, not persons: a person's message always wakes
	bindAgent(t, w.testHome, b)
	idle := func(s *intercom.Session) {
		t.Helper()
		if err := s.SetState(ctx, "idle", nil); err != nil {
			t.Fatal(err)
		}
	}
	busy := func(s *intercom.Session) {
		t.Helper()
		if err := s.SetState(ctx, "thinking", nil); err != nil {
			t.Fatal(err)
		}
	}
	take := func(s *intercom.Session) []wire.Message {
		t.Helper()
		msgs, err := w.c.Inbox(ctx, s.ID(), 0)
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]string, len(msgs))
		for i, m := range msgs {
			ids[i] = m.ID
		}
		if len(ids) > 0 {
			if _, err := w.c.Ack(ctx, s.ID(), ids...); err != nil {
				t.Fatal(err)
			}
		}
		return msgs
	}
	idle(a)
	idle(b)
	if r := w.send(a, "bravo", "ping 1"); r.WakeHeld != "" {
		t.Fatalf("first wake held: %s", r.WakeHeld)
	}
	busy(b)
	take(b)
	idle(b)
	if r := w.send(b, "alpha", "pong 1"); r.WakeHeld != "" {
		t.Fatalf("the wake back held: %s", r.WakeHeld)
	}
	busy(a)
	take(a)
	idle(a)
	held := w.send(a, "bravo", "ping 2")
	if held.WakeHeld != wire.WakeHeldLoop {
		t.Fatalf("second round: reply %+v, want wake_held %s", held, wire.WakeHeldLoop)
	}
	if ready, err := w.c.InboxWait(ctx, b.ID(), 50*time.Millisecond, true); err != nil || ready {
		t.Fatalf("a wake-only wait ended for a held message: %v, %v", ready, err)
	}
	rows, err := w.c.List(ctx, intercom.ListOptions{Scope: "all"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if (r.Name == "alpha" && !strings.Contains(r.WakePaused, "bravo")) || (r.Name == "bravo" && !strings.Contains(r.WakePaused, "alpha")) {
			t.Fatalf("row %s: wake_paused %q", r.Name, r.WakePaused)
		}
	}
	// Its next natural boundary (busy again) takes it, once.
	busy(b)
	got := take(b)
	if len(got) != 1 || got[0].ID != held.ID || got[0].WakeHeld != "" {
		t.Fatalf("at the boundary: %+v, want the held message once, unmarked", got)
	}
	if again := take(b); len(again) != 0 {
		t.Fatalf("delivered twice: %+v", again)
	}
}

// A run's child names its supervisor when it registers: the supervisor's
// steers wake it even when peers may not wake it at all.
func TestSupervisorAlwaysWakesThroughTheBroker(t *testing.T) {
	t.Parallel()
	w := newWorld(t, func(o *Options) { o.Wake = &WakeLimits{Budget: 0, Window: time.Hour} })
	noDeliver := func(o *intercom.AttachOptions) { o.NoDeliver = true }
	sup, peer := w.attach("lead", noDeliver), w.attach("peer", noDeliver)
	bindAgent(t, w.testHome, sup) // agents, not persons: a person's message always wakes
	bindAgent(t, w.testHome, peer)
	w.attach("child", noDeliver, func(o *intercom.AttachOptions) { o.Supervisor = sup.ID() })
	if r := w.send(peer, "child", "from a peer"); r.WakeHeld != wire.WakeHeldBudget {
		t.Fatalf("a peer's steer with wakeBudget 0: wake_held %q, want %q", r.WakeHeld, wire.WakeHeldBudget)
	}
	if r := w.send(sup, "child", "from the supervisor"); r.WakeHeld != "" {
		t.Fatalf("the supervisor's steer held: %s", r.WakeHeld)
	}
}
