package render

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// A stuck row reads "stuck 4m (tool:bash)" in every listing, "stuck 4m"
// in the ui's state column; state itself stays busy in the line format;
// a row not stuck, or not connected, shows what it did before.
func TestStuckRowsShowForHowLong(t *testing.T) {
	busy := wire.Session{ID: "0123456789abcdef", Name: "worker", Target: "worker", Status: "tool:bash", State: wire.StateBusy, Connected: true}
	stuck := busy
	stuck.StuckSince, stuck.StuckSeconds, stuck.StuckReason = time.Now().Add(-4*time.Minute), 245, wire.StuckBusy
	steers := stuck
	steers.Status, steers.State, steers.StuckReason, steers.StuckSeconds = "idle", wire.StateIdle, wire.StuckSteers, 30
	gone := stuck
	gone.Connected = false
	for _, c := range []struct {
		row           wire.Session
		status, state string
	}{
		{busy, "tool:bash", "busy"},
		{stuck, "stuck 4m (tool:bash)", "stuck 4m"},
		{steers, "stuck 30s, steers waiting (idle)", "stuck 30s"},
		{gone, "disconnected", "busy"},
	} {
		if got := ShownStatus(c.row); got != c.status {
			t.Errorf("ShownStatus = %q, want %q", got, c.status)
		}
		if got := ShownState(c.row); got != c.state {
			t.Errorf("ShownState = %q, want %q", got, c.state)
		}
	}
	var b bytes.Buffer
	Sessions(&b, []wire.Session{stuck})
	if line := b.String(); !strings.Contains(line, "[stuck 4m (tool:bash), state:busy,") {
		t.Fatalf("list line: %q", line)
	}
}
