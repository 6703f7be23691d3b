package sessiontable

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"charm.land/lipgloss/v2"

	"github.com/intercom-dev/intercom/internal/render"
	"github.com/intercom-dev/intercom/pkg/wire"
)

func sampleRows() []wire.Session {
	ago := time.Now().Add(-90 * time.Second)
	return []wire.Session{
		{ID: "aaaaaaaa1111", Name: "planner", Target: "planner", Status: "idle", State: "idle", AcceptsAsks: true, Connected: true, Self: true, Project: "/src/shop"},
		{ID: "bbbbbbbb2222", Name: "worker", Target: "worker", Status: "tool:bash", State: "busy", Connected: true, PendingAsks: 2, LastIntercomActivity: &ago, Project: "/src/shop"},
		{ID: "cccccccc3333", Name: "old", Target: "cccccccc", Status: "idle", State: "idle", Project: "/src/other"},
	}
}

func TestSessionTablePlain(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	Print(&b, sampleRows(), Options{})
	out := b.String()
	if strings.Contains(out, "\x1b[") {
		t.Fatalf("plain table has escape codes:\n%q", out)
	}
	lines := strings.Split(out, "\n")
	header := lines[0]
	for _, col := range []string{"NAME", "TARGET", "STATUS", "PROJECT", "ASKS", "LAST ACTIVITY"} {
		if !strings.Contains(header, col) {
			t.Fatalf("header %q lacks %s", header, col)
		}
	}
	// Aligned: each column starts at the same offset on every row.
	at := strings.Index(header, "STATUS")
	for i, want := range []string{"idle", "tool:bash", "disconnected"} {
		if got := strings.Index(lines[1+i], want); got != at {
			t.Errorf("row %d: %q at column %d, header STATUS at %d\n%s", i, want, got, at, out)
		}
	}
	for _, want := range []string{"planner *", "shop", "other", "1m ago", "none", "* this session", "disconnected session keeps", "peer_busy"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// Guidance once, not per row.
	if n := strings.Count(out, "send steers"); n != 1 {
		t.Errorf("guidance printed %d times:\n%s", n, out)
	}
}

func TestSessionTableColourAndWidth(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	Print(&b, sampleRows(), Options{Colour: true, Width: 50})
	out := b.String()
	if !strings.Contains(out, "\x1b[") {
		t.Fatalf("colour table has no escape codes:\n%q", out)
	}
	for _, l := range strings.Split(out, "\n") {
		if w := lipglossWidth(l); w > 50 {
			t.Errorf("row %q is %d columns, want at most 50", l, w)
		}
	}
}

func TestSessionTableEmpty(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	Print(&b, nil, Options{})
	if !strings.Contains(b.String(), "No sessions") {
		t.Fatalf("empty table: %q", b.String())
	}
}

func lipglossWidth(s string) int { return lipgloss.Width(s) }

// TestSessionTableUnreachable: a session of a cut host reads unreachable,
// not disconnected, and the table says what that means once.
func TestSessionTableUnreachable(t *testing.T) {
	t.Parallel()
	rows := []wire.Session{{ID: "dddddddd4444@beta", Name: "b1@beta", Target: "b1@beta", Status: "idle", State: wire.StateUnreachable, Host: "beta"}}
	var b bytes.Buffer
	Print(&b, rows, Options{})
	out := b.String()
	if !strings.Contains(strings.Split(out, "\n")[1], "unreachable") || strings.Contains(out, "disconnected") {
		t.Fatalf("table of a cut host's session:\n%s", out)
	}
	if n := strings.Count(out, "link is down"); n != 1 {
		t.Fatalf("the unreachable note %d times, want 1:\n%s", n, out)
	}
	if got := render.ShownStatus(rows[0]); got != "unreachable" {
		t.Fatalf("ShownStatus = %q, want unreachable", got)
	}
}

// A stuck row's status reads in the table as in every listing.
func TestSessionTableShowsStuck(t *testing.T) {
	row := wire.Session{ID: "0123456789abcdef", Name: "worker", Target: "worker", Status: "tool:bash", State: wire.StateBusy, Connected: true,
		StuckSince: time.Now().Add(-4 * time.Minute), StuckSeconds: 245, StuckReason: wire.StuckBusy}
	var b bytes.Buffer
	Print(&b, []wire.Session{row}, Options{Width: 120})
	if !strings.Contains(b.String(), "stuck 4m (tool:bash)") {
		t.Fatalf("table:\n%s", b.String())
	}
}
