package render

import (
	"fmt"
	"time"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// Stuck is "stuck 4m" for a row the broker marked stuck (for how long, as
// it saw it), with ", steers waiting" when that is why; "" otherwise.
func Stuck(r wire.Session) string {
	if r.StuckSince.IsZero() {
		return ""
	}
	s := stuckFor(r)
	if r.StuckReason == wire.StuckSteers {
		s += ", steers waiting"
	}
	return s
}

// ShownState is a row's state as a person reads it: "stuck 4m" for a
// stuck one, else its state.
func ShownState(r wire.Session) string {
	if r.Connected && !r.StuckSince.IsZero() {
		return stuckFor(r)
	}
	return r.State
}

func stuckFor(r wire.Session) string {
	return "stuck " + Span(time.Duration(r.StuckSeconds)*time.Second)
}

// Span is d in its largest whole unit: 45s, 4m, 2h, 3d.
func Span(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
