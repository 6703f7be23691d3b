package e2e

import (
	"strings"
	"testing"
)

// TestBridgeHostileFloodServingSide (issue 29): beta floods its presence
// subject with big broadcasts. The hub reads every host's presence itself,
// limits each host's rate and bytes, and relays only what passed: no host
// can read another's raw broadcast, so the flood never fans out (on main
// every host received all of it, and the hub dropped the other hosts'
// connections). Meanwhile gamma's messages and asks to alpha go through.
func TestBridgeHostileFloodServingSide(t *testing.T) {
	t.Parallel()
	x := newHostileHub(t)
	hp := x.hp
	const floods = 120
	hp.do(map[string]any{"do": "watch", "subject": "icb.pres.beta"})  // refused on the hub
	hp.do(map[string]any{"do": "watch", "subject": "icb.hpres.beta"}) // what the hub relays
	done := make(chan map[string]any, 1)
	go func() { done <- hp.do(map[string]any{"do": "presence", "rows": 2500, "name": "flood", "n": floods}) }()

	// gamma's message and ask to alpha go through during the flood.
	x.marker(t)
	ask := x.G.Start("-s", "g1", "ask", "a1@alpha", "still there?")
	m := brgExpect(t, x.a1, "still there?")
	x.A.OK("-s", "a1", "reply", "--to", msgStr(m["id"]), "yes, still here")
	if out, code := msgExit(t, ask); code != 0 || !strings.Contains(out, "yes, still here") {
		t.Fatalf("gamma's ask during the flood: exit %d, %s", code, out)
	}
	sent := <-done
	if n, _ := sent["sent"].(float64); n != floods {
		t.Fatalf("the flood: %v", sent)
	}
	// Once the hub took beta's next broadcast, everything before it was
	// relayed or dropped: count what reached a host (beta itself: gamma
	// links only with alpha and ignores beta's broadcasts, but received
	// them all on main).
	Eventually(t, brgWait, func() bool {
		hp.do(map[string]any{"do": "presence", "rows": 1, "name": "after"})
		return remoteRows(t, x.A, "beta", "after") == 1
	}, "beta's presence after the flood, on alpha")
	counts := hp.do(map[string]any{"do": "watched"})["counts"].(map[string]any)
	got := 0.0
	for _, n := range counts {
		got += n.(float64)
	}
	if got > floods/3 {
		t.Fatalf("a host received %v of beta's %d broadcasts; want the hub's rate limit (burst 8, 4 a second)", counts, floods)
	}
	x.marker(t)
	checkHealthy(t, x.A, x.serve)
}
