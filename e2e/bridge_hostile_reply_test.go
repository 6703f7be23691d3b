package e2e

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Issue 29: what a hostile host answers cannot crash the asking broker, and
// a broker restarted after any failure learns every linked host's sessions
// again at once.

// malformedTopicReplies are answers to a topic operation that lack the part
// the operation needs.
var malformedTopicReplies = []string{`{"result":{}}`, `{"result":null}`, `[]`}

// topicOpsSurvive runs `publish` and `subscribe --await-release` on
// topic@host from session sess of h, for each malformed answer of the
// hostile host: each fails with one clear line, and h's broker is the same
// process afterwards.
func topicOpsSurvive(t *testing.T, h *H, hp *hostile, sess, host string) {
	t.Helper()
	pid := h.BrokerPid()
	for _, answer := range malformedTopicReplies {
		hp.do(map[string]any{"do": "answer", "op": "topic", "data": answer})
		for _, args := range [][]string{
			{"-s", sess, "publish", "shared/x@" + host, "hello"},
			{"-s", sess, "subscribe", "shared/x@" + host, "--await-release"},
		} {
			r := h.Run(args...)
			if r.Code != 1 || !strings.Contains(r.Stderr, "reply") {
				t.Errorf("%v answered %s: exit %d, stderr %q; want exit 1 and the reply refused", args[2:], answer, r.Code, r.Stderr)
			}
		}
		if got := h.BrokerPid(); got != pid || !alive(pid) {
			t.Fatalf("after the answer %s the broker is %d (alive %v), was %d", answer, got, alive(pid), pid)
		}
	}
}

// TestBridgeHostileTopicReplyServingSide: beta (the attacker, joined to
// alpha's hub) answers alpha's topic operations with replies that lack
// their result. alpha's broker refuses them and stays up (on main it
// panicked in onPublish / forwardSubscription). Then alpha's broker is
// killed: the next one lists gamma's sessions at once (the bridge resends
// every host's presence when its broker comes back, not only on a change).
func TestBridgeHostileTopicReplyServingSide(t *testing.T) {
	t.Parallel()
	x := newHostileHub(t)
	x.hp.do(map[string]any{"do": "presence", "rows": 1, "name": "b"})
	Eventually(t, brgWait, func() bool { h := bridgeHost(t, x.A, "beta"); return h != nil && h.LinkUp }, "beta up on alpha")
	topicOpsSurvive(t, x.A, x.hp, "a1", "beta")
	x.marker(t)

	// gamma's sessions stay as they are (g1 left: nothing changes on gamma
	// any more), and alpha's broker dies.
	x.g1.Signal(syscall.SIGTERM)
	brgAwaitRow(t, x.A, "g1@gamma", func(r map[string]any) bool { return r["connected"] == false }, "g1@gamma disconnected on alpha")
	x.A.KillBroker()
	Eventually(t, brgWait, func() bool {
		r := x.A.Run("--json", "list", "--scope", "all", "--all") // the first may meet the old broker's socket
		return r.Code == 0 && strings.Contains(r.Stdout, `"g1@gamma"`)
	}, "g1@gamma listed by alpha's new broker")
}

// TestBridgeHostileTopicReplyJoiningSide: the same answers from a malicious
// hub (alpha) that beta's bridge joins.
func TestBridgeHostileTopicReplyJoiningSide(t *testing.T) {
	t.Parallel()
	B := brgNewH(t)
	dir := brgCerts(t, B, "alpha", "beta")
	b1, _ := B.Attach("--name", "b1")
	hp := startHostile(t, "-mode", "server", "-cert", filepath.Join(dir, "alpha.crt"), "-key", filepath.Join(dir, "alpha.key"),
		"-ca", filepath.Join(dir, "ca.crt"), "-name", "alpha", "-victim", "beta")
	addr := msgStr(hp.next(brgWait)["listening"])
	join := brgJoin(t, B, addr, brgMat(dir, "beta", "alpha"))
	if out := hp.do(map[string]any{"do": "wait-client", "wait_ms": 20000}); out["clients"].(float64) < 2 {
		t.Fatalf("beta's bridge did not connect to the hostile hub: %v", out)
	}
	hp.do(map[string]any{"do": "presence", "rows": 1, "name": "a"})
	Eventually(t, brgWait, func() bool { return remoteRows(t, B, "alpha", "a0") == 1 }, "a0@alpha on beta")
	topicOpsSurvive(t, B, hp, "b1", "alpha")
	checkHealthy(t, B, join)
	_ = b1
}
