package runs

import (
	"slices"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/pkg/wire"
)

func TestParseOnStuck(t *testing.T) {
	for spec, want := range map[string][]string{
		"": nil, "nudge": {"nudge"}, "nudge,interrupt,restart": {"nudge", "interrupt", "restart"},
		" interrupt , restart ": {"interrupt", "restart"}, "nudge,restart": {"nudge", "restart"},
	} {
		got, err := ParseOnStuck(spec)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ParseOnStuck(%q) = %v, %v; want %v", spec, got, err, want)
		}
	}
	for _, bad := range []string{"kill", "restart,nudge", "nudge,nudge", "nudge,,restart"} {
		if got, err := ParseOnStuck(bad); err == nil {
			t.Errorf("ParseOnStuck(%q) = %v, want an error", bad, got)
		}
	}
}

func kinds(as []Action) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.Kind)
	}
	return out
}

// The ladder: the notice and the first step as the stall is seen, one
// step per StepAfter, no step twice for one stall, a reset when the stall
// ends or another begins, and the next stall climbs from the bottom.
func TestLadderStepsOncePerStall(t *testing.T) {
	l := &Ladder{Steps: []string{StepNudge, StepInterrupt, StepRestart}, StepAfter: time.Minute}
	t0 := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	busy := wire.Session{Status: "tool:bash", State: wire.StateBusy}
	stuck := busy
	stuck.StuckSince, stuck.StuckReason = t0, wire.StuckBusy
	step := func(row wire.Session, at time.Duration, want ...string) {
		t.Helper()
		if got := kinds(l.Observe(row, t0.Add(at))); !slices.Equal(got, want) {
			t.Fatalf("at +%v: %v, want %v", at, got, want)
		}
	}
	step(busy, 0)
	step(stuck, 10*time.Minute, EventStuck, StepNudge)
	step(stuck, 10*time.Minute+30*time.Second)
	step(stuck, 11*time.Minute, StepInterrupt)
	step(stuck, 12*time.Minute, StepRestart)
	step(stuck, 13*time.Minute)
	step(stuck, 60*time.Minute)
	step(busy, 61*time.Minute, EventReset)
	step(busy, 62*time.Minute)
	again := stuck
	again.StuckSince = t0.Add(61 * time.Minute)
	got := l.Observe(again, t0.Add(72*time.Minute))
	if !slices.Equal(kinds(got), []string{EventStuck, StepNudge}) || got[0].Stall.Number != 2 {
		t.Fatalf("second stall: %+v", got)
	}
	// A new start without an unstuck row in between is a new stall too.
	later := stuck
	later.StuckSince = t0.Add(80 * time.Minute)
	step(later, 90*time.Minute, EventReset, EventStuck, StepNudge)
}

// Without a ladder the owner still tells the supervisor, once a stall.
func TestLadderWithoutStepsOnlyNotices(t *testing.T) {
	l := &Ladder{StepAfter: time.Second}
	row := wire.Session{State: wire.StateBusy, StuckSince: time.Unix(100, 0), StuckReason: wire.StuckBusy}
	now := time.Unix(1000, 0)
	if got := kinds(l.Observe(row, now)); !slices.Equal(got, []string{EventStuck}) {
		t.Fatalf("first look: %v", got)
	}
	for i := range 5 {
		if got := l.Observe(row, now.Add(time.Duration(i+1)*time.Minute)); len(got) != 0 {
			t.Fatalf("look %d: %v", i, kinds(got))
		}
	}
}

// A child that exits during a stall right after the interrupt (pi -p dies
// of SIGINT) is restarted at once when restart is next, once; an exit at
// any other point of the ladder, or with no restart after the interrupt,
// ends the run.
func TestLadderExitedAfterInterrupt(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	stuck := wire.Session{Status: "thinking", State: wire.StateBusy, StuckSince: t0, StuckReason: wire.StuckBusy}
	l := &Ladder{Steps: []string{StepNudge, StepInterrupt, StepRestart}, StepAfter: time.Minute}
	if _, ok := l.Exited(t0); ok {
		t.Fatal("an exit with no stall asks for a restart")
	}
	l.Observe(stuck, t0)
	if _, ok := l.Exited(t0); ok {
		t.Fatal("an exit after the nudge asks for a restart")
	}
	if got := kinds(l.Observe(stuck, t0.Add(time.Minute))); !slices.Equal(got, []string{StepInterrupt}) {
		t.Fatalf("second look: %v", got)
	}
	a, ok := l.Exited(t0.Add(time.Minute + time.Second))
	if !ok || a.Kind != StepRestart || !slices.Equal(a.Stall.Steps, []string{StepNudge, StepInterrupt, StepRestart}) {
		t.Fatalf("exit after the interrupt: %+v, %v", a, ok)
	}
	if _, ok := l.Exited(t0.Add(2 * time.Minute)); ok {
		t.Fatal("a second exit of the stall asks for a second restart")
	}
	if got := l.Observe(stuck, t0.Add(10*time.Minute)); len(got) != 0 {
		t.Fatalf("the ladder climbs on after the restart: %v", kinds(got))
	}

	noRestart := &Ladder{Steps: []string{StepNudge, StepInterrupt}, StepAfter: time.Minute}
	noRestart.Observe(stuck, t0)
	noRestart.Observe(stuck, t0.Add(time.Minute))
	if _, ok := noRestart.Exited(t0.Add(2 * time.Minute)); ok {
		t.Fatal("a ladder without restart asks for one")
	}
}
