package e2e

// Upgrading (docs/install.md): a store written by an older intercom is read,
// one written by a newer intercom is refused with a clear message and left
// untouched.

import (
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/internal/store"
)

// upgStopBroker stops h's broker cleanly (SIGTERM) and waits for it.
func upgStopBroker(t *testing.T, h *H) {
	t.Helper()
	for _, pid := range h.BrokerPids() {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		Eventually(t, 10*time.Second, func() bool { return !alive(pid) }, "broker %d to stop", pid)
	}
}

// upgMarker sets (val != "") or removes the store's format marker with the
// broker stopped, and returns what it was. It opens the store as
// another intercom version would (store.RewriteFormatMarker), so it works
// whatever the marker says.
func upgMarker(t *testing.T, h *H, val string) string {
	t.Helper()
	old, err := store.RewriteFormatMarker(h.Layout.DBDir(), val)
	if err != nil {
		t.Fatal(err)
	}
	return old
}

func TestUpgradeOlderStoreIsRead(t *testing.T) {
	t.Parallel()
	h := newH(t)
	fndNoIdleExit(h)
	p, _ := h.Attach("--name", "w")
	p.Signal(syscall.SIGTERM)
	<-p.Done()
	h.OK("send", "w", "kept across the upgrade")
	upgStopBroker(t, h)
	if was := upgMarker(t, h, ""); was != strconv.Itoa(store.FormatVersion) {
		t.Fatalf("store format marker was %q, want %d", was, store.FormatVersion)
	}
	// The store now looks like one written before format markers existed
	// (format 1): it is migrated, and the message is found, shown and acked
	// through the message index rebuilt from the inbox.
	out := h.OK("--session", "w", "inbox")
	if !strings.Contains(out, "kept across the upgrade") {
		t.Fatalf("message from the older store not delivered:\n%s", out)
	}
	if again := h.OK("--session", "w", "inbox"); strings.Contains(again, "kept across the upgrade") {
		t.Fatalf("message from the older store not acked (shown again):\n%s", again)
	}
	upgStopBroker(t, h)
	if now := upgMarker(t, h, "1"); now != strconv.Itoa(store.FormatVersion) {
		t.Fatalf("after reading the older store its marker is %q, want %d", now, store.FormatVersion)
	}
}

func TestUpgradeNewerStoreRefused(t *testing.T) {
	t.Parallel()
	h := newH(t)
	h.OK("list")
	upgStopBroker(t, h)
	upgMarker(t, h, "99")
	r := h.Run("list")
	t.Logf("list on a newer store: %s", r.Stderr)
	if r.Code != 1 || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
		t.Fatalf("list on a newer store: exit %d stderr %q, want 1 and one line", r.Code, r.Stderr)
	}
	for _, want := range []string{"newer intercom", "format 99", "reads up to " + strconv.Itoa(store.FormatVersion)} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("error %q lacks %q", r.Stderr, want)
		}
	}
	if p := h.BrokerPids(); len(p) != 0 {
		t.Fatalf("a broker runs on a newer store: %v", p)
	}
	if was := upgMarker(t, h, "99"); was != "99" {
		t.Fatalf("the refused store's marker changed to %q", was)
	}
}
