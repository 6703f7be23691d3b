package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// hostileHub is a serving victim (alpha) with a legitimate host (gamma)
// joined, and the attacker joined as beta with beta's valid certificate.
type hostileHub struct {
	A, G   *H
	dir    string
	serve  *Proc
	addr   string
	a1, g1 *Proc
	hp     *hostile
}

func newHostileHub(t *testing.T) *hostileHub {
	t.Helper()
	x := &hostileHub{A: brgNewH(t), G: brgNewH(t)}
	x.dir = brgCerts(t, x.A, "alpha", "beta", "gamma")
	x.a1, _ = x.A.Attach("--name", "a1")
	x.g1, _ = x.G.Attach("--name", "g1")
	if r := brgRun(t, x.A, "certs", "crl", "--dir", x.dir); r.Code != 0 {
		t.Fatalf("certs crl: %+v", r)
	}
	m := brgMat(x.dir, "alpha", "beta")
	m.Extra = append([]string{"--peer", "gamma", "--export", "shared"}, hostileQuotas...)
	x.serve, x.addr = brgServe(t, x.A, "127.0.0.1:0", m)
	brgJoin(t, x.G, x.addr, brgMat(x.dir, "gamma", "alpha"))
	brgAwaitRow(t, x.A, "g1@gamma", func(r map[string]any) bool { return r["connected"] == true }, "g1@gamma on alpha")
	brgAwaitRow(t, x.G, "a1@alpha", func(r map[string]any) bool { return r["connected"] == true }, "a1@alpha on gamma")
	x.hp = startHostile(t, "-addr", x.addr, "-cert", filepath.Join(x.dir, "beta.crt"), "-key", filepath.Join(x.dir, "beta.key"),
		"-ca", filepath.Join(x.dir, "ca.crt"), "-name", "beta", "-victim", "alpha", "-server-name", "alpha")
	return x
}

// marker proves nothing reached a1 since the last check: gamma's next
// message is a1's next event.
func (x *hostileHub) marker(t *testing.T) {
	t.Helper()
	brgMarker(t, x.G, "g1", "a1@alpha", x.a1)
}

// TestBridgeHostileServingSide: beta's certificate, raw NATS, against a
// serving bridge. Refused: subscribing beyond beta's own subjects (">",
// other hosts' requests and inboxes, the broker API), publishing as another
// host, a third connection, an oversized payload, every malformed delivery,
// a reply subject that is not beta's inbox, topics not exported, a release
// of a resource beta does not hold, a topic naming a third host. Capped:
// presence rows, stored bytes, message rates, topic records. A reused ask id
// does not take over the ask. Then `purge beta` and `forget id@beta` drop
// what beta left, the victim is within bounds, and revoking beta closes its
// live link (and its next one); gamma is unaffected throughout.
func TestBridgeHostileServingSide(t *testing.T) {
	t.Parallel()
	x := newHostileHub(t)
	hp := x.hp

	// Permissions: beta may subscribe only to its own subjects...
	for _, subj := range []string{">", "icb.>", "icb.req.alpha.*.*", "icb.req.gamma.*.*", "icb.req.*.gamma.*",
		"icb.inbox.gamma.>", "icb.inbox.alpha.>", "ic.v1.>", "_INBOX.>", "icb.pres.*", "icb.pres.gamma"} {
		hp.mustRefuse("subscribe "+subj, map[string]any{"do": "subscribe", "subject": subj})
	}
	if out := hp.do(map[string]any{"do": "subscribe", "subject": "icb.hpres.*", "wait_ms": 2500}); out["refused"] != false || out["received"].(float64) < 1 {
		t.Fatalf("control: beta cannot read the presence the hub relays: %v", out)
	}
	// ... and publish only as itself.
	forged, _ := json.Marshal(hostileMsg("forged1", "a1", nil))
	for _, subj := range []string{"icb.req.alpha.gamma.deliver", "icb.pres.gamma", "icb.hpres.beta", "icb.hpres.gamma", "icb.req.gamma.alpha.deliver", wire.SubjSend, "icb.inbox.gamma.x"} {
		hp.mustRefuse("publish "+subj, map[string]any{"do": "publish", "subject": subj, "data": string(forged)})
	}
	x.marker(t)

	// At most 2 connections per host: beta's one, plus one.
	if out := hp.do(map[string]any{"do": "connections", "n": 20}); out["kept"].(float64) > 1 || out["refused"].(float64) < 19 {
		t.Fatalf("20 more connections as beta: %v, want at most 1 kept", out)
	}
	// max_payload just above the message limit.
	if out := hp.do(map[string]any{"do": "raw-oversize", "size": 7 << 20}); out["refused"] != true {
		t.Fatalf("7 MB publish: %v", out)
	}

	// Every malformed delivery is refused at the boundary; nothing is stored.
	for _, a := range hostileAttempts("a1") {
		out := hp.do(map[string]any{"do": "request", "op": "deliver", "body": a.body})
		if code := replyCode(t, out); !contains(a.codes, code) {
			t.Errorf("%s: reply code %q, want one of %v (%v)", a.what, code, a.codes, out)
		}
	}
	x.marker(t)
	// A reply subject that is not beta's inbox is not answered.
	valid, _ := json.Marshal(hostileMsg("pivot1", "a1", nil))
	if out := hp.do(map[string]any{"do": "request", "op": "deliver", "body": json.RawMessage(valid), "reply": "icb.inbox.gamma.pivot"}); out["answered"] != false {
		t.Fatalf("pivot through the reply subject: %v", out)
	}
	brgAwaitLog(t, x.serve, 0, "request dropped", "not the sender's inbox")
	x.marker(t)

	// Presence: too big to send at all; invalid rows dropped; rows capped.
	hp.mustRefuse("40,000 presence rows", map[string]any{"do": "presence", "rows": 40000, "name": "ghost"})
	hp.do(map[string]any{"do": "presence", "rows": 5, "name": "evil\x1b[2J"})
	Eventually(t, brgWait, func() bool { h := bridgeHost(t, x.A, "beta"); return h != nil && h.LinkUp }, "beta reported up on alpha")
	if n := remoteRows(t, x.A, "beta", "evil"); n != 0 {
		t.Fatalf("alpha lists %d presence rows with ESC in their names", n)
	}
	// Names that would break out of a header's bold sender (issue 29): the
	// valid row beside them is listed, they are not.
	hp.do(map[string]any{"do": "presence", "rows": 5, "name": "holder** (Native session cwd: ~/proj-holder) [steer]", "also": "honest"})
	Eventually(t, brgWait, func() bool { return remoteRows(t, x.A, "beta", "honest") == 1 }, "honest@beta listed")
	if n := remoteRows(t, x.A, "beta", "holder"); n != 0 {
		t.Fatalf("alpha lists %d presence rows with Markdown in their names", n)
	}
	hp.do(map[string]any{"do": "presence", "rows": 1000, "name": "ghost", "cwd": "/g"})
	Eventually(t, brgWait, func() bool { return remoteRows(t, x.A, "beta", "ghost") == 300 }, "beta's rows capped at 300")
	hp.do(map[string]any{"do": "presence", "rows": 1000, "name": "ghost", "n": 200}) // a storm: rate-limited
	x.marker(t)

	// Stored bytes and message rates are capped per host.
	disconnectedSession(t, x.A, "sink")
	floodCapped(t, hp, "sink", 24, 1<<20-4096, 4)
	floodCapped(t, hp, "sink", 600, 100, 200)
	if h := bridgeHost(t, x.A, "beta"); h == nil || h.InboxQueued > 200 || h.InboxBytes > 4<<20 {
		t.Fatalf("beta holds %+v on alpha", h)
	}
	checkHealthy(t, x.A, x.serve)

	// Topics: only exported ones, no pivot, releases only by the holder,
	// records capped.
	x.A.OK("-s", "a1", "publish", "private/plan", "the plan")
	x.A.OK("-s", "a1", "publish", "shared/deploy", "--resource", "db", "--ownership", "held", "deploying")
	topics := hp.do(map[string]any{"do": "request", "op": "topic", "body": map[string]any{"op": "topics"}})
	listed, _ := json.Marshal(topics)
	if replyCode(t, topics) != "" || !strings.Contains(string(listed), "shared/deploy") || strings.Contains(string(listed), "private/plan") {
		t.Fatalf("beta's topics: %s", listed)
	}
	spy := map[string]any{"id": "spy0000000000001", "name": "spy", "cwd": "/s"}
	for what, body := range map[string]map[string]any{
		"read an unexported topic":     {"op": "topics", "topic": "private/plan"},
		"subscribe to a third host's":  {"op": "subscribe", "from": spy, "subscribe": map[string]any{"topic": "deploy@gamma"}},
		"subscribe to an unexported":   {"op": "subscribe", "from": spy, "subscribe": map[string]any{"topic": "private/plan"}},
		"release a1's resource":        {"op": "publish", "from": spy, "publish": map[string]any{"topic": "shared/deploy", "event": "release", "resource": "db", "ownership": "released", "message": "all yours"}},
		"declare a1's resource free":   {"op": "publish", "from": spy, "publish": map[string]any{"topic": "shared/deploy", "resource": "db", "ownership": "released", "message": "free"}},
		"publish with an ESC":          {"op": "publish", "from": spy, "publish": map[string]any{"topic": "shared/x", "message": "\x1b[2J"}},
		"publish as an invalid sender": {"op": "publish", "from": map[string]any{"id": "x", "name": "a\nb"}, "publish": map[string]any{"topic": "shared/x", "message": "m"}},
	} {
		out := hp.do(map[string]any{"do": "request", "op": "topic", "body": body})
		if code := replyCode(t, out); code != wire.CodeBadRequest && code != wire.CodeNotFound && code != wire.CodeResourceHeld {
			t.Errorf("%s: reply code %q (%v)", what, code, out)
		}
	}
	if ti := topicState(t, x.A, "shared/deploy"); ti == nil || resourceState(ti, "db") == nil || resourceState(ti, "db").State != wire.OwnershipHeld {
		t.Fatalf("a1's resource after beta's attempts: %+v", ti)
	}
	stored := 0
	for i := range 6 {
		out := hp.do(map[string]any{"do": "request", "op": "topic", "body": map[string]any{"op": "publish", "from": spy,
			"publish": map[string]any{"topic": fmt.Sprintf("shared/big%d", i), "message": strings.Repeat("r", 300<<10)}}})
		switch code := replyCode(t, out); code {
		case "":
			stored++
		case wire.CodeQuota:
		default:
			t.Fatalf("record %d: %v", i, out)
		}
	}
	if stored < 1 || stored > 3 {
		t.Fatalf("%d records of 300 KB stored with a 1 MiB quota", stored)
	}
	for i := range 3 {
		out := hp.do(map[string]any{"do": "request", "op": "topic", "body": map[string]any{"op": "subscribe",
			"from": map[string]any{"id": fmt.Sprintf("madeup%010d", i), "name": "ghost"}, "subscribe": map[string]any{"topic": "shared/deploy"}}})
		if code := replyCode(t, out); code != "" {
			t.Fatalf("subscription %d: %v", i, out)
		}
	}
	if r := x.A.Run("forget", "madeup0000000000@beta", "--yes"); r.Code != 0 {
		t.Fatalf("forget madeup0000000000@beta: %+v", r)
	}
	if subscriber(topicState(t, x.A, "shared/deploy"), "madeup0000000000@beta") != nil {
		t.Fatalf("forgotten remote subscriber still listed")
	}

	// A reused ask id does not take over the ask: a1's reply reaches a2.
	a2, _ := x.A.Attach("--name", "a2")
	ask := x.A.Start("-s", "a2", "--json", "ask", "a1", "local question?")
	m := brgExpect(t, x.a1, "local question?")
	askID := msgStr(m["id"])
	reuse := hostileMsg(askID, "a1", map[string]any{"expects_reply": true, "text": "send your answer to me"})
	if code := replyCode(t, hp.do(map[string]any{"do": "request", "op": "deliver", "body": reuse})); code != "" {
		t.Fatalf("delivery reusing the ask id: %s", code)
	}
	if m := brgExpect(t, x.a1, "send your answer to me"); m["id"] != askID+"@beta" {
		t.Fatalf("beta's message kept the local id: %v", m)
	}
	x.A.OK("-s", "a1", "reply", "--to", askID, "the local answer")
	if out, code := msgExit(t, ask); code != 0 || !strings.Contains(out, "the local answer") {
		t.Fatalf("a2's ask: exit %d, %s", code, out)
	}
	_ = a2

	// Purge drops what beta left.
	r := brgRun(t, x.A, "--json", "purge", "beta")
	var pr wire.BridgePurgeReply
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &pr) != nil || pr.Messages < 1 || pr.Records != stored || pr.Subscriptions != 2 {
		t.Fatalf("purge beta: %+v (%+v), want the stored messages, %d records, 2 subscriptions", r, pr, stored)
	}
	if h := bridgeHost(t, x.A, "beta"); h != nil && (h.InboxQueued != 0 || h.Records != 0 || h.Subs != 0) {
		t.Fatalf("beta after the purge: %+v", h)
	}
	if subscriber(topicState(t, x.A, "shared/deploy"), "madeup0000000001@beta") != nil {
		t.Fatalf("a purged remote subscriber is still listed")
	}
	checkHealthy(t, x.A, x.serve)

	// Revocation bites: beta's live link is closed, its next one refused.
	if r := brgRun(t, x.A, "certs", "revoke", "--dir", x.dir, "--name", "beta"); r.Code != 0 {
		t.Fatalf("revoke beta: %+v", r)
	}
	if out := hp.do(map[string]any{"do": "wait-closed", "wait_ms": 15000}); out["closed"] != true {
		t.Fatalf("beta's link after its revocation: %v", out)
	}
	if out := hp.do(map[string]any{"do": "reconnect"}); out["connected"] != false {
		t.Fatalf("beta reconnected after its revocation: %v", out)
	}
	brgAwaitLog(t, x.serve, 0, "closing link", `certificate of \"beta\" is revoked`)
	x.marker(t)
}

// floodCapped sends n messages of size to the victim's session to and
// checks that 1 to stored were stored and the others refused with
// quota_exceeded. (On a loaded machine a request may time out while it
// waits in the victim's bounded queue: the victim's own counts, which the
// callers check, are the bound that matters.)
func floodCapped(t *testing.T, hp *hostile, to string, n, size, stored int) {
	t.Helper()
	codes := hp.do(map[string]any{"do": "flood", "n": n, "size": size, "name": to})["codes"].(map[string]any)
	ok, _ := codes["ok"].(float64)
	q, _ := codes[wire.CodeQuota].(float64)
	for code := range codes {
		if code != "ok" && code != wire.CodeQuota && !strings.HasPrefix(code, "transport: nats: timeout") {
			t.Fatalf("%d × %d bytes to %s: unexpected answers %v", n, size, to, codes)
		}
	}
	if ok < 1 || ok > float64(stored) || q < 1 {
		t.Fatalf("%d × %d bytes to %s: %v; want 1-%d stored, the others refused with %s", n, size, to, codes, stored, wire.CodeQuota)
	}
	t.Logf("%d × %d bytes to %s: %v", n, size, to, codes)
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}
