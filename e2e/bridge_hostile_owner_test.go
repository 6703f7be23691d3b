package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// Issue 29: ownership follows its holder. A hostile host cannot take a
// resource a local session holds and then release it (on main the claim
// was accepted, the resource's state being the newest record naming it,
// and the release that followed woke the local --await-release waiter);
// nor can a second local session.

// ownershipAttempts sends the attacker's claim and release, in both
// orders, as a topic operation of host from; each must be refused with
// resource_held.
func ownershipAttempts(t *testing.T, hp *hostile, from string) {
	t.Helper()
	spy := map[string]any{"id": "spy0000000000001", "name": "spy", "cwd": "/s"}
	claim := map[string]any{"topic": "shared/deploy", "resource": "prod-db", "ownership": "held", "message": "mine now"}
	release := map[string]any{"topic": "shared/deploy", "event": "release", "resource": "prod-db", "ownership": "released", "message": "all yours"}
	for _, order := range [][]map[string]any{{claim, release}, {release, claim}} {
		for _, pub := range order {
			out := hp.do(map[string]any{"do": "request", "op": "topic", "from": from, "body": map[string]any{"op": "publish", "from": spy, "publish": pub}})
			if code := replyCode(t, out); code != wire.CodeResourceHeld {
				t.Errorf("%v: reply code %q, want %s (%v)", pub, code, wire.CodeResourceHeld, out)
			}
		}
	}
}

// holdAndWait makes holder hold prod-db on shared/deploy of h and waiter
// await its release.
func holdAndWait(t *testing.T, h *H, holder, waiter string) {
	t.Helper()
	h.OK("-s", waiter, "subscribe", "shared/deploy", "--await-release")
	h.OK("-s", holder, "publish", "shared/deploy", "--resource", "prod-db", "--ownership", "held", "deploying")
}

// stillHeld checks that holder holds prod-db on h, and that a second local
// session cannot claim or release it either.
func stillHeld(t *testing.T, h *H, holder, other string) {
	t.Helper()
	for _, args := range [][]string{
		{"--resource", "prod-db", "--ownership", "held", "mine now"},
		{"--event", "release", "--resource", "prod-db", "--ownership", "released", "free"},
	} {
		r := h.Run(append([]string{"-s", other, "publish", "shared/deploy"}, args...)...)
		if r.Code != 1 || !strings.Contains(r.Stderr, "held by "+holder) {
			t.Errorf("%s publishes %v: exit %d, %q; want refused, held by %s", other, args, r.Code, r.Stderr, holder)
		}
	}
	res := resourceState(topicState(t, h, "shared/deploy"), "prod-db")
	if res == nil || res.State != wire.OwnershipHeld || res.Holder == nil || res.Holder.Name != holder {
		t.Fatalf("prod-db after the attempts: %+v, want held by %s", res, holder)
	}
}

func TestBridgeHostileOwnershipServingSide(t *testing.T) {
	t.Parallel()
	x := newHostileHub(t)
	w, _ := x.A.Attach("--name", "w")
	x.A.Attach("--name", "a3")
	holdAndWait(t, x.A, "a1", "w")
	ownershipAttempts(t, x.hp, "")
	stillHeld(t, x.A, "a1", "a3")
	brgAwaitRow(t, x.G, "w@alpha", func(r map[string]any) bool { return r["connected"] == true }, "w@alpha on gamma")
	brgMarker(t, x.G, "g1", "w@alpha", w) // the waiter was not woken
}

func TestBridgeHostileOwnershipJoiningSide(t *testing.T) {
	t.Parallel()
	B := brgNewH(t)
	dir := brgCerts(t, B, "alpha", "beta")
	w, _ := B.Attach("--name", "w")
	B.Attach("--name", "b1")
	B.Attach("--name", "b3")
	hp := startHostile(t, "-mode", "server", "-cert", filepath.Join(dir, "alpha.crt"), "-key", filepath.Join(dir, "alpha.key"),
		"-ca", filepath.Join(dir, "ca.crt"), "-name", "alpha", "-victim", "beta")
	addr := msgStr(hp.next(brgWait)["listening"])
	m := brgMat(dir, "beta", "alpha")
	m.Extra = []string{"--export", "shared"}
	brgJoin(t, B, addr, m)
	if out := hp.do(map[string]any{"do": "wait-client", "wait_ms": 20000}); out["clients"].(float64) < 2 {
		t.Fatalf("beta's bridge did not connect to the hostile hub: %v", out)
	}
	hp.do(map[string]any{"do": "presence", "rows": 1, "name": "a"})
	Eventually(t, brgWait, func() bool { return remoteRows(t, B, "alpha", "a0") == 1 }, "a0@alpha on beta")
	holdAndWait(t, B, "b1", "w")
	ownershipAttempts(t, hp, "")
	stillHeld(t, B, "b1", "b3")
	marker := hostileMsg("marker1", "w", map[string]any{"text": "marker after the attempts"})
	if code := replyCode(t, hp.do(map[string]any{"do": "request", "op": "deliver", "body": marker})); code != "" {
		t.Fatalf("control: a valid delivery from alpha: %s", code)
	}
	if ev := brgNextMsg(t, w); ev["text"] != "marker after the attempts" {
		t.Fatalf("w's next event %v, want only the marker (it was woken)", ev)
	}
}
