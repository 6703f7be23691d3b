package broker

import (
	"testing"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// TestRemoteHostUnreachable: over a link that went down, a host's
// connected session is listed unreachable (by default too), its
// disconnected one stays disconnected, none accepts asks; back to normal
// when the link is up again.
func TestRemoteHostUnreachable(t *testing.T) {
	tk := newTasks()
	defer func() { tk.stop(); tk.wait() }()
	rt := newRouteTable(tk)
	rows := []wire.Session{
		{ID: "0123456789abcdef", Name: "b1", State: wire.StateIdle, Connected: true, AcceptsAsks: true},
		{ID: "fedcba9876543210", Name: "b2", State: wire.StateDisconnected},
	}
	report := func(up bool) {
		t.Helper()
		if _, err := rt.update(wire.BridgePresence{Host: "beta", LinkUp: up, Sessions: rows}, rows, 10, func() {}); err != nil {
			t.Fatal(err)
		}
	}
	states := func() map[string]wire.Session {
		out := map[string]wire.Session{}
		for _, r := range rt.rows() {
			out[r.Name] = r
		}
		return out
	}
	report(true)
	if got := states(); got["b1@beta"].State != wire.StateIdle || !got["b1@beta"].Connected {
		t.Fatalf("link up: %+v", got)
	}
	report(false)
	got := states()
	b1, b2 := got["b1@beta"], got["b2@beta"]
	if b1.State != wire.StateUnreachable || b1.Connected || b1.AcceptsAsks {
		t.Fatalf("link down: b1@beta %+v, want unreachable, not connected, no asks", b1)
	}
	if b2.State != wire.StateDisconnected {
		t.Fatalf("link down: b2@beta %+v, want disconnected", b2)
	}
	list := listFilter{&wire.ListRequest{Scope: "all"}}
	if !list.keeps(&b1) || list.keeps(&b2) {
		t.Fatalf("default list keeps unreachable %t (want true), disconnected %t (want false)", list.keeps(&b1), list.keeps(&b2))
	}
	if tg, err := rt.resolve("b1", "beta"); err != nil || tg.row.State != wire.StateUnreachable || tg.up {
		t.Fatalf("resolve over a down link: %+v, %v", tg, err)
	}
	report(true)
	if got := states(); got["b1@beta"].State != wire.StateIdle || !got["b1@beta"].Connected {
		t.Fatalf("link up again: %+v", got)
	}
}
