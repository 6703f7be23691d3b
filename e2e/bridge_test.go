package e2e

// Bridge (SPEC "Bridge", issue 7): two machines simulated by two
// INTERCOM_HOMEs on one host, each with its own broker; intercom-bridge
// serve on "alpha" and join on "beta" link them over mutual TLS on
// 127.0.0.1 (port 0). Everything runs against the real binaries.
//
// Absence across a link is proven two ways: a marker sent after the thing
// that must not happen travels the same ordered path (outbox, oldest first)
// and must be the next event; where no link exists to carry a marker (a
// refused link), the sender's outbox still holds every queued message
// (an outbox entry goes only once the remote broker stored it) and the
// recipient has printed nothing, followed by the queued messages arriving
// exactly once when a good link is made.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

const brgWait = 20 * time.Second

// TestBridgeListBothWays: each side lists the other's sessions as name@host
// with their state, in --scope all only; state changes and new sessions
// propagate.
func TestBridgeListBothWays(t *testing.T) {
	t.Parallel()
	p := brgLinked(t)
	// No ca.crl beside the CA: both sides say, loudly, that revocation is off.
	brgAwaitLog(t, p.serve, 0, "NO REVOCATION LIST LOADED", "")
	brgAwaitLog(t, p.join, 0, "NO REVOCATION LIST LOADED", "")

	b := brgRow(t, p.A, "b1@beta")
	if b == nil || b["id"] != p.b1ID+"@beta" || b["target"] != "b1@beta" || b["host"] != "beta" ||
		b["connected"] != true || b["state"] != wire.StateIdle || b["accepts_asks"] != true {
		t.Fatalf("alpha's row for b1@beta: %v (b1 is %s)", b, p.b1ID)
	}
	a := brgRow(t, p.B, "a1@alpha")
	if a == nil || a["id"] != p.a1ID+"@alpha" || a["target"] != "a1@alpha" || a["host"] != "alpha" ||
		a["connected"] != true || a["state"] != wire.StateIdle {
		t.Fatalf("beta's row for a1@alpha: %v (a1 is %s)", a, p.a1ID)
	}
	// The local rows are not touched: a1 is plain a1 on alpha.
	if r := Row(p.A.Sessions("--scope", "all"), "a1"); r == nil || r["id"] != p.a1ID {
		t.Fatalf("alpha's own row for a1: %v", r)
	}
	// The default (project) scope shows no remote rows, on either side.
	for _, h := range []*H{p.A, p.B} {
		for _, r := range h.Sessions() {
			if strings.Contains(msgStr(r["name"]), "@") || r["host"] != nil {
				t.Fatalf("project-scope list shows a remote row: %v", r)
			}
		}
	}

	// The human list shows the remote row too.
	if out := p.A.OK("list", "--scope", "all"); !strings.Contains(out, "b1@beta") {
		t.Fatalf("human list --scope all lacks b1@beta:\n%s", out)
	}

	// A new session on beta appears on alpha; a state change follows.
	b2, b2ev := p.B.Attach("--name", "b2")
	brgAwaitRow(t, p.A, "b2@beta", func(r map[string]any) bool { return r["connected"] == true }, "b2@beta connected on alpha")
	p.B.OK("-s", "b2", "state", "thinking")
	brgAwaitRow(t, p.A, "b2@beta", func(r map[string]any) bool {
		return r["status"] == "thinking" && r["state"] == wire.StateBusy && r["accepts_asks"] == false
	}, "b2@beta thinking on alpha")
	// b2 leaves: alpha sees it disconnected, and only with --all.
	b2.Signal(syscall.SIGTERM)
	brgAwaitRow(t, p.A, "b2@beta", func(r map[string]any) bool {
		return r["connected"] == false && r["state"] == wire.StateDisconnected
	}, "b2@beta disconnected on alpha")
	if r := Row(p.A.Sessions("--scope", "all"), "b2@beta"); r != nil {
		t.Fatalf("disconnected b2@beta listed without --all: %v", r)
	}
	if id := b2ev["id"]; brgRow(t, p.A, "b2@beta")["id"] != fmt.Sprint(id)+"@beta" {
		t.Fatalf("b2@beta id %v, want %v@beta", brgRow(t, p.A, "b2@beta")["id"], id)
	}
}

// TestBridgeSendBothWays: a send across the link is stored by the remote
// broker before the command returns (remote_stored), arrives once with the
// sender as name@host, and a reply goes back the same way.
func TestBridgeSendBothWays(t *testing.T) {
	t.Parallel()
	p := brgLinked(t)

	r := brgSend(t, p.A, "a1", "b1@beta", "hello from alpha")
	if !r.RemoteStored || r.Queued || r.ID == "" || r.To.ID != p.b1ID+"@beta" || r.To.Name != "b1@beta" {
		t.Fatalf("send a1 → b1@beta: %+v", r)
	}
	m := brgExpect(t, p.b1, "hello from alpha")
	from := msgSub(m, "from")
	if m["id"] != r.ID+"@alpha" || from["name"] != "a1@alpha" || from["id"] != p.a1ID+"@alpha" || m["delivery"] != "steer" {
		t.Fatalf("b1 got %v; want id %s from a1@alpha (%s@alpha)", m, r.ID, p.a1ID)
	}

	r2 := brgSend(t, p.B, "b1", "a1@alpha", "hello from beta")
	if !r2.RemoteStored || r2.Queued || r2.To.ID != p.a1ID+"@alpha" {
		t.Fatalf("send b1 → a1@alpha: %+v", r2)
	}
	m = brgExpect(t, p.a1, "hello from beta")
	if m["id"] != r2.ID+"@beta" || msgSub(m, "from")["name"] != "b1@beta" || msgSub(m, "from")["id"] != p.b1ID+"@beta" {
		t.Fatalf("a1 got %v; want id %s from b1@beta", m, r2.ID)
	}

	// A reply across the link names the message it answers, and the remote
	// sender is addressable as it was shown (from.name).
	var rr wire.SendReply
	p.B.JSON(&rr, "-s", "b1", "send", "a1@alpha", "--reply-to", r.ID, "got", "it")
	if !rr.RemoteStored {
		t.Fatalf("reply b1 → a1@alpha: %+v", rr)
	}
	m = brgExpect(t, p.a1, "got it")
	if m["reply_to"] != r.ID || msgSub(m, "from")["name"] != "b1@beta" {
		t.Fatalf("reply as delivered: %v", m)
	}

	// Human output says it was stored remotely.
	out := p.A.OK("-s", "a1", "send", "b1@beta", "plain")
	brgExpect(t, p.b1, "plain")
	if strings.Contains(out, "queued") {
		t.Fatalf("send over a live link says queued: %q", out)
	}

	// Exactly once: each side's next event is a fresh marker.
	brgMarker(t, p.A, "a1", "b1@beta", p.b1)
	brgMarker(t, p.B, "b1", "a1@alpha", p.a1)

	// An unknown remote session is refused at once over a live link.
	res := p.A.Run("-s", "a1", "send", "nobody@beta", "x")
	if res.Code == 0 || !strings.Contains(res.Stderr, "nobody") {
		t.Fatalf("send to nobody@beta: exit %d, stderr %q", res.Code, res.Stderr)
	}
	brgMarker(t, p.A, "a1", "b1@beta", p.b1)
}

// TestBridgeAskReplyBothWays: an ask across the link reaches the remote
// session as an ask; `reply` there answers it and the asker's command
// prints the reply; both directions. The reply is not also pushed to the
// asker's holder.
func TestBridgeAskReplyBothWays(t *testing.T) {
	t.Parallel()
	p := brgLinked(t)

	for _, dir := range []struct {
		ask, rep         *H
		asker, answerer  string
		target           string
		askerP, answerP  *Proc
		askerID, fromAsk string
		askerHost        string
	}{
		{p.A, p.B, "a1", "b1", "b1@beta", p.a1, p.b1, p.a1ID, "a1@alpha", "alpha"},
		{p.B, p.A, "b1", "a1", "a1@alpha", p.b1, p.a1, p.b1ID, "b1@beta", "beta"},
	} {
		q := "question from " + dir.asker
		ask := dir.ask.Start("-s", dir.asker, "--json", "ask", dir.target, q)
		m := brgExpect(t, dir.answerP, q)
		if m["expects_reply"] != true || msgSub(m, "from")["name"] != dir.fromAsk {
			t.Fatalf("ask as delivered to %s: %v", dir.answerer, m)
		}
		var pend struct {
			Asks []map[string]any `json:"asks"`
		}
		dir.rep.JSON(&pend, "-s", dir.answerer, "pending")
		if len(pend.Asks) != 1 || pend.Asks[0]["reply_to"] != m["id"] || msgSub(pend.Asks[0], "from")["name"] != dir.fromAsk {
			t.Fatalf("pending on %s: %v", dir.answerer, pend.Asks)
		}
		dir.rep.OK("-s", dir.answerer, "reply", "answer from "+dir.answerer)
		out, code := msgExit(t, ask)
		var res struct {
			OK    bool           `json:"ok"`
			AskID string         `json:"ask_id"`
			Reply map[string]any `json:"reply"`
		}
		// The ask is known on the other host as "<id>@<asker's host>".
		if code != 0 || json.Unmarshal([]byte(out), &res) != nil || !res.OK || res.AskID+"@"+dir.askerHost != m["id"] ||
			res.Reply["text"] != "answer from "+dir.answerer || res.Reply["reply_to"] != res.AskID ||
			msgSub(res.Reply, "from")["name"] != dir.target {
			t.Fatalf("ask %s → %s: exit %d, stdout %q, stderr %q", dir.asker, dir.target, code, out, ask.Stderr())
		}
		dir.rep.JSON(&pend, "-s", dir.answerer, "pending")
		if len(pend.Asks) != 0 {
			t.Fatalf("pending on %s after the reply: %v", dir.answerer, pend.Asks)
		}
		// The reply went to the waiting ask, not to the asker's holder:
		// the holder's next event is a marker sent after it over the same
		// link.
		brgMarker(t, dir.rep, dir.answerer, dir.fromAsk, dir.askerP)
	}
}

// TestBridgeTopics: a session subscribes to a topic of the other machine
// (topic@host); updates there are quiet, a release wakes it through the
// link; `topics topic@host` shows the remote record; a publication to
// topic@host wakes the remote subscribers.
func TestBridgeTopics(t *testing.T) {
	t.Parallel()
	p := brgLinked(t)
	b2, _ := p.B.Attach("--name", "b2")
	brgAwaitRow(t, p.A, "b2@beta", func(r map[string]any) bool { return r["connected"] == true }, "b2@beta on alpha")

	var sub wire.SubscribeReply
	p.A.JSON(&sub, "-s", "a1", "subscribe", "tab@beta", "--await-release")
	if sub.Topic != "tab@beta" || !sub.AwaitRelease {
		t.Fatalf("subscribe tab@beta: %+v", sub)
	}
	p.B.OK("-s", "b2", "subscribe", "tab")

	// Alpha's subscription lives on beta's broker.
	ti := topicState(t, p.B, "tab")
	if s := subscriber(ti, "a1@alpha"); s == nil || !s.AwaitRelease {
		t.Fatalf("beta's topic tab subscribers: %+v, want a1@alpha with await-release", ti)
	}

	// An update is quiet across the link.
	r := publish(t, p.B, "b1", "tab", "--resource", "r", "--ownership", "held", "keep this tab")
	if r.Woken != 0 {
		t.Fatalf("update woke %d", r.Woken)
	}
	brgMarker(t, p.B, "b1", "a1@alpha", p.a1)

	// The release wakes a1, through the link.
	r = publish(t, p.B, "b1", "tab", "--event", "release", "--resource", "r", "--ownership", "released", "done with the tab")
	if r.Woken != 1 {
		t.Fatalf("release woke %d, want 1 (a1@alpha)", r.Woken)
	}
	ev := p.a1.Event(brgWait)
	if ev["event"] != wire.EventRelease || ev["topic"] != "tab@beta" || ev["text"] != "done with the tab" ||
		ev["resource"] != "r" || ev["ownership"] != wire.OwnershipReleased || msgSub(ev, "from")["name"] != "b1@beta" {
		t.Fatalf("a1's wake-up: %v, want release on tab@beta from b1@beta", ev)
	}
	brgMarker(t, p.B, "b1", "a1@alpha", p.a1) // once
	brgMarker(t, p.B, "b1", "b2", b2)         // the plain subscriber slept

	// alpha reads beta's topic state.
	ti = topicState(t, p.A, "tab@beta")
	rec := recordFrom(ti, "b1")
	if ti == nil || rec == nil || rec.Event != wire.EventRelease || rec.Message != "done with the tab" || rec.Ownership != wire.OwnershipReleased {
		t.Fatalf("topics tab@beta from alpha: %+v", ti)
	}
	if res := resourceState(ti, "r"); res == nil || res.State != wire.OwnershipReleased {
		t.Fatalf("resource r from alpha: %+v", res)
	}
	if out := p.A.OK("topics", "tab@beta"); !strings.Contains(out, "done with the tab") {
		t.Fatalf("human topics tab@beta lacks the record:\n%s", out)
	}

	// The other way: alpha publishes a blocker on beta's topic; b2 (and
	// b1? not subscribed) wake; the record is kept on beta as a1@alpha's.
	r = publish(t, p.A, "a1", "tab@beta", "--event", "blocker", "stop using the tab")
	if r.Woken != 1 {
		t.Fatalf("blocker from alpha woke %d, want 1 (b2; a1 itself is not woken)", r.Woken)
	}
	ev = b2.Event(brgWait)
	if ev["event"] != wire.EventBlocker || ev["topic"] != "tab" || ev["text"] != "stop using the tab" || msgSub(ev, "from")["name"] != "a1@alpha" {
		t.Fatalf("b2's wake-up: %v", ev)
	}
	if rec := recordFrom(topicState(t, p.B, "tab"), "a1@alpha"); rec == nil || rec.Event != wire.EventBlocker {
		t.Fatalf("beta's record for a1@alpha: %+v", rec)
	}
	brgMarker(t, p.B, "b1", "a1@alpha", p.a1) // the publisher was not woken by its own blocker
	brgMarker(t, p.B, "b1", "b2", b2)
}

// TestBridgeRefusals: a peer with another CA's certificate, an expired
// certificate, the wrong name, or no certificate at all is refused with a
// clear log line; nothing crosses: no sessions listed either way, sends
// stay queued, nothing arrives. Then a good join delivers exactly the
// queued messages, once (proving they were queued, not lost).
func TestBridgeRefusals(t *testing.T) {
	t.Parallel()
	A, B := brgNewH(t), brgNewH(t)
	dir := brgCerts(t, A, "alpha", "beta", "gamma")
	foreign := brgCerts(t, A, "beta")                                              // another CA, a beta of its own
	expired := brgCopyCA(t, A, dir, "beta", "--not-before=-48h", "--valid-for=1h") // right CA, expired beta
	a1, a1ev := A.Attach("--name", "a1")
	b1, _ := B.Attach("--name", "b1")
	serve, addr := brgServe(t, A, "127.0.0.1:0", brgMat(dir, "alpha", "beta"))

	var sentA, sentB []string // queued messages, in order
	queue := func(label string) {
		t.Helper()
		r := brgSendQueued(t, A, "a1", "b1@beta", "while refused: "+label)
		sentA = append(sentA, r.ID)
	}
	noLink := func(label string) {
		t.Helper()
		for _, r := range A.Sessions("--scope", "all", "--all") {
			if r["host"] != nil || strings.HasSuffix(msgStr(r["name"]), "@beta") {
				t.Fatalf("%s: alpha lists a beta session over a refused link: %v", label, r)
			}
		}
		for _, r := range B.Sessions("--scope", "all", "--all") {
			if r["host"] != nil || strings.HasSuffix(msgStr(r["name"]), "@alpha") {
				t.Fatalf("%s: beta lists an alpha session over a refused link: %v", label, r)
			}
		}
	}

	for _, c := range []struct {
		label   string
		mat     brgTLS
		onServe string // the serving side logs a refusal with this
		onJoin  string // the joining side refuses, logging this ("": it does not)
	}{
		{"another CA's certificate", brgTLS{Cert: filepath.Join(foreign, "beta.crt"), Key: filepath.Join(foreign, "beta.key"),
			CA: filepath.Join(dir, "ca.crt"), Name: "beta", Peer: "alpha"}, "unknown authority", ""},
		{"another CA altogether", brgMat(foreign, "beta", "alpha"), "bad certificate", "unknown authority"},
		{"expired certificate", brgTLS{Cert: filepath.Join(expired, "beta.crt"), Key: filepath.Join(expired, "beta.key"),
			CA: filepath.Join(dir, "ca.crt"), Name: "beta", Peer: "alpha"}, "expired", ""},
		// gamma's valid certificate where beta is expected (a bridge cannot
		// claim another name than its certificate's: TestBridgeServeRefusesWrongPeerName).
		{"certificate of the wrong host", brgTLS{Cert: filepath.Join(dir, "gamma.crt"), Key: filepath.Join(dir, "gamma.key"),
			CA: filepath.Join(dir, "ca.crt"), Name: "gamma", Peer: "alpha"}, `peer certificate names \"gamma\", expected \"beta\"`, ""},
		{"server of the wrong name", brgTLS{Cert: filepath.Join(dir, "beta.crt"), Key: filepath.Join(dir, "beta.key"),
			CA: filepath.Join(dir, "ca.crt"), Name: "beta", Peer: "gamma"}, "bad certificate", "gamma"},
	} {
		soff := len(serve.Stderr())
		join := brgJoinRefused(t, B, addr, c.mat)
		brgAwaitLog(t, serve, soff, "link refused", c.onServe)
		if c.onJoin != "" {
			brgAwaitLog(t, join, 0, "link refused", c.onJoin)
		}
		// Refused again on retry: the join keeps trying and keeps failing.
		soff2 := len(serve.Stderr())
		brgAwaitLog(t, serve, soff2, "link refused", c.onServe)
		queue(c.label)
		if len(sentB) == 0 {
			// beta's broker learnt of host alpha from this (refused) join.
			sentB = append(sentB, brgSendQueued(t, B, "b1", "a1@alpha", "from beta while refused").ID)
		}
		noLink(c.label)
		brgInOutbox(t, A, "beta", sentA...)
		b1.NoneBuffered()
		join.Kill()
		if strings.Contains(serve.Stderr()[soff:], `"link established"`) || strings.Contains(join.Stderr(), `"link established"`) {
			t.Fatalf("%s: a link was established\nserve: %s\njoin: %s", c.label, serve.Stderr()[soff:], join.Stderr())
		}
	}

	// No client certificate at all: a NATS client with TLS but no
	// certificate, and one without TLS, are both turned away.
	soff := len(serve.Stderr())
	pool := x509.NewCertPool()
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil || !pool.AppendCertsFromPEM(caPEM) {
		t.Fatalf("read CA: %v", err)
	}
	nc, err := nats.Connect("tls://"+addr, nats.Secure(&tls.Config{RootCAs: pool, ServerName: "alpha", MinVersion: tls.VersionTLS13}), nats.TLSHandshakeFirst(),
		nats.Timeout(5*time.Second), nats.NoReconnect())
	if err == nil {
		_, rerr := nc.Request("icb.alpha.presence", nil, 2*time.Second)
		nc.Close()
		t.Fatalf("a client without certificate connected (presence request: %v)", rerr)
	}
	brgAwaitLog(t, serve, soff, "link refused", "certificate")
	nc, err = nats.Connect("nats://"+addr, nats.Timeout(5*time.Second), nats.NoReconnect())
	if err == nil {
		nc.Close()
		t.Fatalf("a client without TLS connected")
	}
	// A raw TLS client without certificate: the handshake may complete on
	// the client's side (TLS 1.3), but the first read fails and nothing of
	// the NATS protocol comes back.
	brgRawNoCert(t, addr, pool)
	queue("no client certificate")
	noLink("no client certificate")

	// Nothing crossed either way while the link was refused.
	brgInOutbox(t, A, "beta", sentA...)
	brgInOutbox(t, B, "alpha", sentB...)
	b1.NoneBuffered()
	a1.NoneBuffered()
	if strings.Contains(serve.Stderr(), `"link established"`) {
		t.Fatalf("serve established a link:\n%s", serve.Stderr())
	}

	// Control: a good join links, and exactly the queued messages arrive,
	// in order, once.
	brgJoin(t, B, addr, brgMat(dir, "beta", "alpha"))
	for _, id := range sentA {
		m := brgNextMsg(t, b1)
		if m["id"] != id+"@alpha" || msgSub(m, "from")["id"] != msgStr(a1ev["id"])+"@alpha" {
			t.Fatalf("b1 got %v, want queued message %s (all: %v)", m, id, sentA)
		}
	}
	for _, id := range sentB {
		if m := brgNextMsg(t, a1); m["id"] != id+"@beta" {
			t.Fatalf("a1 got %v, want queued message %s", m, id)
		}
	}
	brgMarker(t, A, "a1", "b1@beta", b1)
	brgMarker(t, B, "b1", "a1@alpha", a1)
}

// TestBridgeServeRefusesWrongPeerName: a serve that expects another host
// (--peer gamma) refuses beta's valid certificate; and a bridge cannot call
// itself by another name than its certificate's (join --name gamma with
// beta's certificate exits 2 at once, naming both).
func TestBridgeServeRefusesWrongPeerName(t *testing.T) {
	t.Parallel()
	A, B := brgNewH(t), brgNewH(t)
	dir := brgCerts(t, A, "alpha", "beta")
	B.Attach("--name", "b1")
	serve, addr := brgServe(t, A, "127.0.0.1:0", brgMat(dir, "alpha", "gamma"))
	m := brgMat(dir, "beta", "alpha")
	m.Name = "gamma"
	if r := brgRun(t, B, append([]string{"join", addr}, m.args()...)...); r.Code != 2 || !strings.Contains(r.Stderr, `--cert names "beta", not --name "gamma"`) {
		t.Fatalf("join --name gamma with beta's certificate: %+v, want exit 2 naming both", r)
	}
	join := brgJoinRefused(t, B, addr, brgMat(dir, "beta", "alpha"))
	brgAwaitLog(t, serve, 0, "link refused", `peer certificate names \"beta\", expected \"gamma\"`)
	brgAwaitLog(t, join, 0, "link refused", "")
	off := len(serve.Stderr())
	brgAwaitLog(t, serve, off, "link refused", "expected") // and again on retry
	for _, r := range A.Sessions("--scope", "all", "--all") {
		if r["host"] != nil {
			t.Fatalf("alpha lists %v over a refused link", r)
		}
	}
	if strings.Contains(serve.Stderr(), `"link established"`) || strings.Contains(join.Stderr(), `"link established"`) {
		t.Fatalf("a link was established:\n%s\n%s", serve.Stderr(), join.Stderr())
	}
}

// TestBridgeRevokedRefused: after `certs revoke beta`, a restarted serve
// refuses beta; alpha shows beta's sessions unreachable and queues for
// them; without the revocation list the same certificate links again and
// the queued message arrives once.
func TestBridgeRevokedRefused(t *testing.T) {
	t.Parallel()
	p := brgLinked(t)
	brgSend(t, p.A, "a1", "b1@beta", "before revocation")
	brgExpect(t, p.b1, "before revocation")

	out := brgRun(t, p.A, "certs", "revoke", "--dir", p.certs, "--name", "beta")
	if out.Code != 0 || !strings.Contains(out.Stdout, "revoked beta") {
		t.Fatalf("certs revoke: %+v", out)
	}
	p.join.Signal(syscall.SIGTERM)
	p.serve.Signal(syscall.SIGTERM)
	serve, addr := brgServe(t, p.A, "127.0.0.1:0", brgMat(p.certs, "alpha", "beta"))
	join := brgJoinRefused(t, p.B, addr, brgMat(p.certs, "beta", "alpha"))
	brgAwaitLog(t, serve, 0, "link refused", `certificate of \"beta\" is revoked`)
	brgAwaitRow(t, p.A, "b1@beta", func(r map[string]any) bool {
		return r["connected"] == false && r["state"] == wire.StateUnreachable
	}, "b1@beta unreachable on alpha")
	r := brgSendQueued(t, p.A, "a1", "b1@beta", "after revocation")
	brgAwaitLog(t, serve, len(serve.Stderr()), "link refused", "revoked") // still refused after the send
	brgInOutbox(t, p.A, "beta", r.ID)
	p.b1.NoneBuffered()
	if row := brgRow(t, p.A, "b1@beta"); row == nil || row["connected"] != false {
		t.Fatalf("b1@beta on alpha after refusals: %v", row)
	}
	if strings.Contains(serve.Stderr(), `"link established"`) {
		t.Fatalf("the revoked peer linked:\n%s", serve.Stderr())
	}

	// Control: the same certificates link once the CRL is gone.
	join.Kill()
	serve.Kill()
	if err := os.Rename(filepath.Join(p.certs, "ca.crl"), filepath.Join(p.certs, "old.crl")); err != nil {
		t.Fatal(err)
	}
	_, addr = brgServe(t, p.A, "127.0.0.1:0", brgMat(p.certs, "alpha", "beta"))
	brgJoin(t, p.B, addr, brgMat(p.certs, "beta", "alpha"))
	if m := brgNextMsg(t, p.b1); m["id"] != r.ID+"@alpha" || m["text"] != "after revocation" {
		t.Fatalf("b1 got %v, want the queued %s", m, r.ID)
	}
	brgMarker(t, p.A, "a1", "b1@beta", p.b1)
}

// TestBridgeLinkDropRestoreExactlyOnce: the joining bridge is killed; alpha
// sees beta's sessions unreachable (listed, not gone); 20 sends queue durably; when the
// bridge returns, exactly those 20 arrive, in order, once.
func TestBridgeLinkDropRestoreExactlyOnce(t *testing.T) {
	t.Parallel()
	p := brgLinked(t)
	brgSend(t, p.A, "a1", "b1@beta", "warm-up")
	brgExpect(t, p.b1, "warm-up")

	p.join.Kill() // SIGKILL: no goodbye
	brgAwaitRow(t, p.A, "b1@beta", func(r map[string]any) bool {
		return r["connected"] == false && r["state"] == wire.StateUnreachable
	}, "b1@beta unreachable on alpha")
	// Unreachable, not gone: listed without --all too (beta never said b1 left).
	if r := Row(p.A.Sessions("--scope", "all"), "b1@beta"); r == nil || r["state"] != wire.StateUnreachable {
		t.Fatalf("unreachable b1@beta in the default list: %v", r)
	}
	// An ask needs a live link.
	res := p.A.Run("-s", "a1", "ask", "b1@beta", "there?")
	if res.Code == 0 || !strings.Contains(res.Stderr, "peer_offline") {
		t.Fatalf("ask over a dropped link: exit %d, stderr %q", res.Code, res.Stderr)
	}
	// The human send output says queued.
	if out := p.A.OK("-s", "a1", "send", "b1@beta", "queued 0"); !strings.Contains(out, "queued") {
		t.Fatalf("send over a dropped link: %q", out)
	}
	ids := []string{""}
	texts := []string{"queued 0"}
	for i := 1; i <= 20; i++ {
		text := fmt.Sprintf("queued %d", i)
		r := brgSend(t, p.A, "a1", "b1@beta", text)
		if !r.Queued || r.RemoteStored {
			t.Fatalf("send %d over a dropped link: %+v", i, r)
		}
		ids, texts = append(ids, r.ID), append(texts, text)
	}
	brgInOutbox(t, p.A, "beta", ids[1:]...)
	p.b1.NoneBuffered()

	brgJoin(t, p.B, p.addr, brgMat(p.certs, "beta", "alpha"))
	for i, text := range texts {
		m := brgNextMsg(t, p.b1)
		if m["text"] != text || (ids[i] != "" && m["id"] != ids[i]+"@alpha") {
			t.Fatalf("message %d after restore: %v, want %q (%s)", i, m, text, ids[i])
		}
	}
	brgAwaitRow(t, p.A, "b1@beta", func(r map[string]any) bool { return r["connected"] == true }, "b1@beta connected again")
	// Nothing twice: the outbox is drained oldest first, so any leftover
	// would come before this marker.
	brgMarker(t, p.A, "a1", "b1@beta", p.b1)
	// And beta's inbox for b1 holds nothing unacknowledged.
	Eventually(t, brgWait, func() bool {
		var st struct {
			Queued int `json:"queued_inbound"`
		}
		p.B.JSON(&st, "-s", "b1", "status")
		return st.Queued == 0
	}, "b1's inbox to be empty")
}

// TestBridgeLocalBridgeKilledShowsLinkDown: when the local bridge process
// dies without a word (SIGKILL), the local broker does not keep showing the
// remote sessions as connected, and sends report queued at once.
func TestBridgeLocalBridgeKilledShowsLinkDown(t *testing.T) {
	t.Parallel()
	p := brgLinked(t)
	p.join.Kill() // beta's own bridge
	brgAwaitRow(t, p.B, "a1@alpha", func(r map[string]any) bool {
		return r["connected"] == false && r["state"] == wire.StateUnreachable
	}, "a1@alpha unreachable on beta after beta's bridge died")
	// The row shown as unreachable is the broker's own verdict that the
	// link is down, the one that makes a send answer queued without
	// waiting for the remote; how long the send took is reported only.
	start := time.Now()
	r := brgSend(t, p.B, "b1", "a1@alpha", "while beta's bridge is dead")
	if !r.Queued || r.RemoteStored {
		t.Fatalf("send with beta's bridge dead: %+v", r)
	}
	t.Logf("send with the bridge dead answered queued in %s (measured, not asserted)", time.Since(start).Round(time.Millisecond))
	brgJoin(t, p.B, p.addr, brgMat(p.certs, "beta", "alpha"))
	if m := brgNextMsg(t, p.a1); m["id"] != r.ID+"@beta" {
		t.Fatalf("a1 got %v, want %s", m, r.ID)
	}
	brgMarker(t, p.B, "b1", "a1@alpha", p.a1)
}

// TestBridgeServeKilledMidStream: the serving bridge is SIGKILLed while
// beta's outbox is being forwarded to alpha, then restarted on the same
// address; every message arrives exactly once, in order. (Where the kill
// lands in the stream is up to the scheduler: the test kills it once a1 has
// printed the first few of 200 messages, and the assertions hold for every
// interleaving; it logs how far the stream had got.)
func TestBridgeServeKilledMidStream(t *testing.T) {
	t.Parallel()
	p := brgLinked(t)
	const n = 200

	p.serve.Kill()
	brgAwaitRow(t, p.B, "a1@alpha", func(r map[string]any) bool {
		return r["connected"] == false && r["state"] == wire.StateUnreachable
	}, "a1@alpha unreachable on beta")
	// The CLI proves the queued report elsewhere; here a Go client makes
	// the stream long enough to be cut in the middle.
	c := brgClient(t, p.B)
	ids := make([]string, n)
	for i := range ids {
		ctx, cancel := context.WithTimeout(context.Background(), brgWait)
		r, err := c.Send(ctx, wire.SendRequest{From: p.b1ID, To: "a1@alpha", Text: fmt.Sprintf("stream %d", i)})
		cancel()
		if err != nil || !r.Queued || r.RemoteStored {
			t.Fatalf("send %d with the link down: %+v, %v", i, r, err)
		}
		ids[i] = r.ID
	}
	serve, _ := brgServe(t, p.A, p.addr, brgMat(p.certs, "alpha", "beta"))
	got := 0
	next := func() {
		t.Helper()
		m := brgNextMsg(t, p.a1)
		if m["id"] != ids[got]+"@beta" || m["text"] != fmt.Sprintf("stream %d", got) {
			t.Fatalf("a1's message %d: %v, want %s (stream %d)", got, m, ids[got], got)
		}
		got++
	}
	for got < 3 {
		next()
	}
	joinLog := len(p.join.Stderr())
	serve.Kill() // mid-stream, most likely
	t.Logf("serve killed after a1 printed %d of %d (%d more already buffered)", got, n, len(p.a1.lines))
	brgServe(t, p.A, p.addr, brgMat(p.certs, "alpha", "beta"))
	for got < n {
		next()
	}
	// The stream can be through (forwarded before the kill, in batches)
	// before the joining bridge has even noticed the kill, and beta's row
	// can still show the killed link: the marker waits until the bridge
	// is linked to the new server and beta's broker hears that alpha is
	// up, or it is only queued.
	brgAwaitLog(t, p.join, joinLog, "link up", p.addr)
	brgAwaitRow(t, p.B, "a1@alpha", func(r map[string]any) bool { return r["connected"] == true }, "a1@alpha connected again on beta")
	brgMarker(t, p.B, "b1", "a1@alpha", p.a1)
}

// TestBridgeReceivingBrokerKilledMidStream: the receiving host's broker
// dies (SIGKILL) in the middle of a stream from the other host, while
// messages are pushed to their holder as they are persisted: the holder
// restarts it, the bridge forwards what was not stored, and the holder
// prints every message once, in order.
func TestBridgeReceivingBrokerKilledMidStream(t *testing.T) {
	t.Parallel()
	p := brgLinked(t)
	const n = 200
	c := brgClient(t, p.B)
	ids := make(chan string, n)
	sent := make(chan error, 1)
	go func() {
		for i := range n {
			ctx, cancel := context.WithTimeout(context.Background(), brgWait)
			r, err := c.Send(ctx, wire.SendRequest{From: p.b1ID, To: "a1@alpha", Text: fmt.Sprintf("stream %d", i)})
			cancel()
			if err != nil {
				sent <- fmt.Errorf("send %d: %w", i, err)
				return
			}
			ids <- r.ID
		}
		sent <- nil
	}()
	got := 0
	next := func() {
		t.Helper()
		id := <-ids
		m := p.a1.Event(brgWait)
		for m["event"] == "reconnected" { // a1 says it reconnected once
			m = p.a1.Event(brgWait)
		}
		if m["event"] != "message" || m["id"] != id+"@beta" || m["text"] != fmt.Sprintf("stream %d", got) {
			t.Fatalf("a1's message %d: %v, want %s@beta (stream %d)", got, m, id, got)
		}
		got++
	}
	for got < 3 {
		next()
	}
	p.A.KillBroker() // mid-stream: a1 starts another, the bridge reconnects
	t.Logf("alpha's broker killed after a1 printed %d of %d", got, n)
	for got < n {
		next()
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	brgAwaitRow(t, p.B, "a1@alpha", func(r map[string]any) bool { return r["connected"] == true }, "a1@alpha connected again on beta")
	brgMarker(t, p.B, "b1", "a1@alpha", p.a1) // and nothing came twice before it
}

// TestBridgeBrokersHaveNoTCPSockets: with the link up and messages flowing,
// neither broker holds a TCP or UDP socket; the serving bridge holds the
// one TCP listener on its address; the joining bridge listens nowhere; and
// the link reaches only the bridge's subjects, never the broker's API.
func TestBridgeBrokersHaveNoTCPSockets(t *testing.T) {
	t.Parallel()
	brgTCPControl(t)
	p := brgLinked(t)
	brgSend(t, p.A, "a1", "b1@beta", "traffic")
	brgExpect(t, p.b1, "traffic")

	for _, h := range []*H{p.A, p.B} {
		pids := h.BrokerPids()
		if len(pids) != 1 {
			t.Fatalf("brokers of %s: %v, want one", h.Home, pids)
		}
		pid := strconv.Itoa(pids[0])
		socks := brgSocketInodes(t, pid)
		if len(socks) == 0 {
			t.Fatalf("broker %s holds no socket at all; the check would prove nothing", pid)
		}
		for _, table := range []string{"tcp", "tcp6", "udp", "udp6"} {
			for ino := range brgNetRows(t, pid, table) {
				if socks[ino] {
					t.Errorf("broker %s (home %s) holds a %s socket (inode %s)", pid, h.Home, table, ino)
				}
			}
		}
	}

	_, portStr, _ := net.SplitHostPort(p.addr)
	port, _ := strconv.Atoi(portStr)
	spid := strconv.Itoa(p.serve.Cmd.Process.Pid)
	listening := brgListeners(t, spid)
	if len(listening) != 1 || listening[0] != port {
		t.Fatalf("serve bridge listens on TCP ports %v, want exactly [%d]", listening, port)
	}
	if l := brgListeners(t, strconv.Itoa(p.join.Cmd.Process.Pid)); len(l) != 0 {
		t.Fatalf("join bridge listens on TCP ports %v, want none", l)
	}

	// What the link exposes: a client with beta's valid certificate
	// receives alpha's presence (as the hub relays it), and reaches none of
	// the broker API.
	cfg := brgClientTLS(t, p.certs, "beta", "alpha")
	nc, err := nats.Connect("tls://"+p.addr, nats.Secure(cfg), nats.TLSHandshakeFirst(), nats.Timeout(5*time.Second),
		nats.NoReconnect(), nats.CustomInboxPrefix("icb.inbox.beta"))
	if err != nil {
		t.Fatalf("control: beta's certificate cannot connect: %v", err)
	}
	defer nc.Close()
	pres, err := nc.SubscribeSync("icb.hpres.alpha")
	if err != nil {
		t.Fatal(err)
	}
	var seen bool
	for deadline := time.Now().Add(brgWait); !seen && time.Now().Before(deadline); {
		m, err := pres.NextMsg(brgWait)
		if err != nil {
			t.Fatalf("control: no presence from alpha over the link: %v", err)
		}
		seen = strings.Contains(string(m.Data), p.a1ID)
	}
	if !seen {
		t.Fatalf("control: alpha's presence never listed a1 (%s)", p.a1ID)
	}
	for _, subj := range []string{wire.SubjList, wire.SubjSend, wire.SubjBridgeOutbox, wire.SubjBridgeAck} {
		if _, err := nc.Request(subj, []byte(`{}`), time.Second); err == nil {
			t.Errorf("%s answered over the link: the broker API is exposed", subj)
		}
	}
}

// ---- helpers ----

// brgNewH is one "machine": its own home and broker, no idle exit, the
// race-built CLI not sleeping at exit, a broker data race failing the test.
func brgNewH(t *testing.T) *H {
	t.Helper()
	h := newH(t)
	h.WriteConfig(`{"idleExitMs": 0}`)
	h.Env = append(h.Env, "GORACE=atexit_sleep_ms=0")
	t.Cleanup(func() {
		if data, err := os.ReadFile(h.Layout.BrokerLog()); err == nil && strings.Contains(string(data), "DATA RACE") {
			t.Errorf("the broker of %s reported a data race:\n%s", h.Home, data)
		}
	})
	return h
}

// brgClient connects the test process to h's running broker.
func brgClient(t *testing.T, h *H) *intercom.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), brgWait)
	defer cancel()
	c, err := intercom.Connect(ctx, intercom.Options{Home: h.Home, NoSpawn: true, Name: "e2e-" + t.Name()})
	if err != nil {
		t.Fatalf("connect to the broker of %s: %v", h.Home, err)
	}
	t.Cleanup(c.Close)
	return c
}

// brgRun runs intercom-bridge to completion.
func brgRun(t *testing.T, h *H, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := h.cmd(ctx, "intercom-bridge", args...)
	var out, errb strings.Builder
	c.Stdout, c.Stderr = &out, &errb
	code := 0
	if err := c.Run(); err != nil {
		ee, ok := err.(interface{ ExitCode() int })
		if !ok {
			t.Fatalf("intercom-bridge %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return Result{out.String(), errb.String(), code}
}

// brgCerts makes a fresh CA and host certificates; it returns the directory.
func brgCerts(t *testing.T, h *H, hosts ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ca")
	if r := brgRun(t, h, "certs", "init", "--dir", dir); r.Code != 0 {
		t.Fatalf("certs init: %+v", r)
	}
	for _, host := range hosts {
		if r := brgRun(t, h, "certs", "issue", "--dir", dir, "--name", host); r.Code != 0 {
			t.Fatalf("certs issue %s: %+v", host, r)
		}
	}
	return dir
}

// brgCopyCA copies the CA of dir into a new directory and issues host there
// with extra flags (same CA, another certificate for the same name).
func brgCopyCA(t *testing.T, h *H, dir, host string, extra ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "ca-copy")
	if err := os.MkdirAll(out, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"ca.crt", "ca.key"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, f), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if r := brgRun(t, h, append([]string{"certs", "issue", "--dir", out, "--name", host}, extra...)...); r.Code != 0 {
		t.Fatalf("certs issue %s %v: %+v", host, extra, r)
	}
	return out
}

// brgTLS is the certificate material of one bridge side, and more flags.
type brgTLS struct {
	Cert, Key, CA, Name, Peer string
	Extra                     []string
}

// brgMat is host's certificate from dir, trusting dir's CA, expecting peer.
func brgMat(dir, host, peer string) brgTLS {
	return brgTLS{Cert: filepath.Join(dir, host+".crt"), Key: filepath.Join(dir, host+".key"),
		CA: filepath.Join(dir, "ca.crt"), Name: host, Peer: peer}
}

func (m brgTLS) args() []string {
	return append([]string{"--cert", m.Cert, "--key", m.Key, "--ca", m.CA, "--name", m.Name, "--peer", m.Peer}, m.Extra...)
}

// brgServe starts `intercom-bridge --json serve` in h and waits for it to be
// ready; it returns the process and the address it listens on.
func brgServe(t *testing.T, h *H, listen string, m brgTLS) (*Proc, string) {
	t.Helper()
	p := h.StartBin("intercom-bridge", append([]string{"--json", "serve", "--listen", listen}, m.args()...)...)
	brgRaceCheck(t, p)
	ev := p.Event(brgWait)
	addr, _ := ev["addr"].(string)
	if ev["event"] != "ready" || addr == "" || ev["name"] != m.Name || !strings.Contains(msgStr(ev["peer"]), m.Peer) {
		t.Fatalf("serve: first event %v", ev)
	}
	if _, port, _ := net.SplitHostPort(addr); port == "0" {
		t.Fatalf("serve reported port 0: %v", ev)
	}
	return p, addr
}

// brgJoin starts `intercom-bridge --json join addr` in h and waits for it to
// be ready: linked and serving its side.
func brgJoin(t *testing.T, h *H, addr string, m brgTLS) *Proc {
	t.Helper()
	p := brgJoinRefused(t, h, addr, m)
	if ev := p.Event(brgWait); ev["event"] != "ready" || ev["addr"] != addr {
		t.Fatalf("join: event after connecting %v, want ready", ev)
	}
	return p
}

// brgJoinRefused starts a join that is not expected to link: it waits for
// its "connecting" event only.
func brgJoinRefused(t *testing.T, h *H, addr string, m brgTLS) *Proc {
	t.Helper()
	p := h.StartBin("intercom-bridge", append([]string{"--json", "join", addr}, m.args()...)...)
	brgRaceCheck(t, p)
	if ev := p.Event(brgWait); ev["event"] != "connecting" || ev["addr"] != addr {
		t.Fatalf("join: first event %v, want connecting", ev)
	}
	return p
}

// brgRaceCheck fails the test if a bridge process reports a data race.
func brgRaceCheck(t *testing.T, p *Proc) {
	t.Cleanup(func() {
		if strings.Contains(p.Stderr(), "DATA RACE") {
			t.Errorf("%v reported a data race:\n%s", p.Cmd.Args, p.Stderr())
		}
	})
}

// brgPair is two linked machines with one attached session each.
type brgPair struct {
	A, B        *H
	certs       string
	a1, b1      *Proc
	a1ID, b1ID  string
	serve, join *Proc
	addr        string
}

// brgLinked sets up alpha (serving) and beta (joining), a1 attached on
// alpha and b1 on beta, and waits until each lists the other's session.
// Both export the topic "tab".
func brgLinked(t *testing.T) *brgPair {
	t.Helper()
	p := &brgPair{A: brgNewH(t), B: brgNewH(t)}
	p.certs = brgCerts(t, p.A, "alpha", "beta")
	var ev map[string]any
	p.a1, ev = p.A.Attach("--name", "a1")
	p.a1ID = msgStr(ev["id"])
	p.b1, ev = p.B.Attach("--name", "b1")
	p.b1ID = msgStr(ev["id"])
	p.serve, p.addr = brgServe(t, p.A, "127.0.0.1:0", p.mat("alpha", "beta"))
	p.join = brgJoin(t, p.B, p.addr, p.mat("beta", "alpha"))
	brgAwaitRow(t, p.A, "b1@beta", func(r map[string]any) bool { return r["connected"] == true }, "b1@beta connected on alpha")
	brgAwaitRow(t, p.B, "a1@alpha", func(r map[string]any) bool { return r["connected"] == true }, "a1@alpha connected on beta")
	return p
}

// mat is host's material in the pair's CA, exporting the topic tab.
func (p *brgPair) mat(host, peer string) brgTLS {
	m := brgMat(p.certs, host, peer)
	m.Extra = []string{"--export", "tab"}
	return m
}

// brgRow returns the `list --scope all --all` row named name, or nil.
func brgRow(t *testing.T, h *H, name string) map[string]any {
	t.Helper()
	return Row(h.Sessions("--scope", "all", "--all"), name)
}

// brgAwaitRow waits until h lists name and cond holds for its row.
func brgAwaitRow(t *testing.T, h *H, name string, cond func(map[string]any) bool, what string) {
	t.Helper()
	brgAwaitRowWithin(t, h, name, cond, what, brgWait)
}

// brgAwaitRowWithin is brgAwaitRow waiting up to wait.
func brgAwaitRowWithin(t *testing.T, h *H, name string, cond func(map[string]any) bool, what string, wait time.Duration) {
	t.Helper()
	var last map[string]any
	deadline := time.Now().Add(wait)
	for {
		last = brgRow(t, h, name)
		if last != nil && cond(last) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; last row %v", what, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// brgSend runs `-s sess --json send to text` and returns the reply.
func brgSend(t *testing.T, h *H, sess, to, text string) wire.SendReply {
	t.Helper()
	var r wire.SendReply
	h.JSON(&r, "-s", sess, "send", to, text)
	return r
}

// brgSendQueued sends to a remote target over a link that is not up and
// checks the message was queued. Until a bridge has told the broker about
// the host, the broker does not know it ("unknown host"); that refusal
// stores nothing, so it is retried.
func brgSendQueued(t *testing.T, h *H, sess, to, text string) wire.SendReply {
	t.Helper()
	var r wire.SendReply
	var last Result
	Eventually(t, brgWait, func() bool {
		last = h.Run("--json", "-s", sess, "send", to, text)
		if last.Code != 0 {
			if !strings.Contains(last.Stdout+last.Stderr, "unknown host") { // --json: the error envelope is on stdout
				t.Fatalf("send %s: exit %d, stderr %q", to, last.Code, last.Stderr)
			}
			return false
		}
		return true
	}, "the host of %s to be known", to)
	if err := json.Unmarshal([]byte(last.Stdout), &r); err != nil {
		t.Fatalf("decode send: %v\n%s", err, last.Stdout)
	}
	if !r.Queued || r.RemoteStored || r.ID == "" {
		t.Fatalf("send %s over a link that is not up: %+v, want queued", to, r)
	}
	return r
}

// brgInOutbox checks that h's outbox for host still holds every id: none
// of them has been stored by the remote broker.
func brgInOutbox(t *testing.T, h *H, host string, ids ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), brgWait)
	defer cancel()
	out, err := intercom.Call[wire.InboxReply](ctx, brgClient(t, h), wire.SubjBridgeOutbox, wire.BridgeOutboxRequest{Host: host, Limit: 1000})
	if err != nil {
		t.Fatalf("read the outbox for %s: %v", host, err)
	}
	held := map[string]bool{}
	for _, m := range out.Messages {
		held[m.ID] = true
	}
	for _, id := range ids {
		if !held[id] {
			t.Fatalf("message %s left the outbox for %s (the remote stored it) while no link was up; outbox: %d messages", id, host, len(out.Messages))
		}
	}
}

// brgNextMsg returns p's next event, which must be a message.
func brgNextMsg(t *testing.T, p *Proc) map[string]any {
	t.Helper()
	ev := p.Event(brgWait)
	if ev["event"] != "message" {
		t.Fatalf("next event %v, want a message", ev)
	}
	return ev
}

// brgExpect checks that p's next event is a message with text.
func brgExpect(t *testing.T, p *Proc, text string) map[string]any {
	t.Helper()
	m := brgNextMsg(t, p)
	if m["text"] != text {
		t.Fatalf("next message %v, want %q", m, text)
	}
	return m
}

var brgMarkerN atomic.Int64

// brgMarker sends a fresh marker from sess on h to target and asserts it is
// p's next event: nothing else arrived in between.
func brgMarker(t *testing.T, h *H, sess, target string, p *Proc) {
	t.Helper()
	marker := fmt.Sprintf("brg-marker-%s-%d", target, brgMarkerN.Add(1))
	r := brgSend(t, h, sess, target, marker)
	if strings.Contains(target, "@") && !r.RemoteStored {
		t.Fatalf("marker to %s not stored remotely: %+v", target, r)
	}
	ev := p.Event(brgWait)
	if ev["event"] != "message" || ev["text"] != marker {
		t.Fatalf("%s: next event %v, want only the marker %q", target, ev, marker)
	}
}

// brgAwaitLog waits until p's stderr, from offset off on, has a line with
// both substrings.
func brgAwaitLog(t *testing.T, p *Proc, off int, sub1, sub2 string) {
	t.Helper()
	deadline := time.Now().Add(brgWait)
	for {
		s := p.Stderr()
		if off > len(s) {
			off = len(s)
		}
		for _, l := range strings.Split(s[off:], "\n") {
			if strings.Contains(l, sub1) && strings.Contains(l, sub2) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line with %q and %q from %v; stderr:\n%s", sub1, sub2, p.Cmd.Args, tail(s, 30))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// brgRawNoCert speaks to the serving bridge as a raw client without a
// certificate. The port says nothing in plaintext (TLS comes first: no NATS
// INFO before the handshake); a TLS client without a certificate that sends
// CONNECT and PING must never get an answer.
func brgRawNoCert(t *testing.T, addr string, pool *x509.CertPool) {
	t.Helper()
	plain, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = plain.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	if n, err := plain.Read(make([]byte, 64)); n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("serve spoke in plaintext before TLS: %d bytes, %v", n, err)
	}
	plain.Close()
	raw, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	_ = raw.SetDeadline(time.Now().Add(10 * time.Second))
	c := tls.Client(raw, &tls.Config{RootCAs: pool, ServerName: "alpha", MinVersion: tls.VersionTLS13})
	if err := c.Handshake(); err == nil {
		_, _ = c.Write([]byte("CONNECT {\"verbose\":false}\r\nPING\r\n"))
		buf := make([]byte, 512)
		n, rerr := c.Read(buf)
		if rerr == nil || n > 0 {
			t.Fatalf("a TLS client without certificate got %q from serve (err %v)", buf[:n], rerr)
		}
	}
}

// brgClientTLS is a client TLS configuration with host's certificate.
func brgClientTLS(t *testing.T, dir, host, peer string) *tls.Config {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, host+".crt"), filepath.Join(dir, host+".key"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	data, _ := os.ReadFile(filepath.Join(dir, "ca.crt"))
	pool.AppendCertsFromPEM(data)
	return &tls.Config{RootCAs: pool, ServerName: peer, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS13}
}

// brgSocketInodes returns the inodes of the sockets open in pid.
func brgSocketInodes(t *testing.T, pid string) map[string]bool {
	t.Helper()
	ents, err := os.ReadDir("/proc/" + pid + "/fd")
	if err != nil {
		t.Fatalf("read fds of %s: %v", pid, err)
	}
	out := map[string]bool{}
	for _, e := range ents {
		link, err := os.Readlink("/proc/" + pid + "/fd/" + e.Name())
		if err != nil {
			continue
		}
		if strings.HasPrefix(link, "socket:[") {
			out[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	return out
}

// brgNetRow is one row of /proc/<pid>/net/{tcp,tcp6,udp,udp6}.
type brgNetRow struct {
	port  int
	state string // hex; 0A is LISTEN
}

// brgNetRows reads /proc/<pid>/net/<table> keyed by inode.
func brgNetRows(t *testing.T, pid, table string) map[string]brgNetRow {
	t.Helper()
	data, err := os.ReadFile("/proc/" + pid + "/net/" + table)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		t.Fatalf("read net/%s: %v", table, err)
	}
	out := map[string]brgNetRow{}
	for i, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if i == 0 || len(f) < 10 {
			continue
		}
		local := f[1]
		port, _ := strconv.ParseInt(local[strings.LastIndexByte(local, ':')+1:], 16, 32)
		out[f[9]] = brgNetRow{port: int(port), state: f[3]}
	}
	return out
}

// brgListeners returns the TCP ports pid listens on.
func brgListeners(t *testing.T, pid string) []int {
	t.Helper()
	socks := brgSocketInodes(t, pid)
	var ports []int
	for _, table := range []string{"tcp", "tcp6"} {
		for ino, r := range brgNetRows(t, pid, table) {
			if socks[ino] && r.state == "0A" {
				ports = append(ports, r.port)
			}
		}
	}
	return ports
}

// brgTCPControl: the parser finds a TCP listener of the test process itself
// (else the absence checks would prove nothing).
func brgTCPControl(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	found := false
	for _, p := range brgListeners(t, strconv.Itoa(os.Getpid())) {
		found = found || p == port
	}
	if !found {
		t.Fatalf("control: our own listener on %d is not found in /proc/self/net/tcp", port)
	}
}

// TestBridgeAskEndsWhenBridgeDiesSilently: an ask waiting on a session of
// the other machine ends with peer_disconnected once the asker's bridge has
// died without a word (SIGKILL: no "link down" report) and its last report
// goes stale, long before the ask's own timeout.
func TestBridgeAskEndsWhenBridgeDiesSilently(t *testing.T) {
	t.Parallel()
	p := brgLinked(t)
	ask := p.B.Start("-s", "b1", "--json", "ask", "--timeout", "10m", "a1@alpha", "still there?")
	brgExpect(t, p.a1, "still there?")
	p.join.Kill() // beta's own bridge: silent
	out, code := msgExit(t, ask)
	var res struct {
		OK     bool   `json:"ok"`
		Reason string `json:"reason"`
	}
	if code == 0 || json.Unmarshal([]byte(out), &res) != nil || res.OK || res.Reason != "peer_disconnected" {
		t.Fatalf("ask after a silent bridge death: exit %d, stdout %q, stderr %q; want reason peer_disconnected", code, out, ask.Stderr())
	}
}

// TestBridgeQuotaToSender: a sender over the remote host's quota is told so
// (quota_exceeded, exit 1) while it waits; a message queued while the link
// was down stays queued while the quota is full, and arrives once the
// recipient has read what filled it: accepted messages are never lost.
// And `intercom topics` reads a topic state bigger than one NATS message
// (it is paged).
func TestBridgeQuotaToSender(t *testing.T) {
	t.Parallel()
	A, B := brgNewH(t), brgNewH(t)
	dir := brgCerts(t, A, "alpha", "beta")
	readerID := disconnectedSession(t, A, "reader")
	b1, _ := B.Attach("--name", "b1")
	sm := brgMat(dir, "alpha", "beta")
	sm.Extra = []string{"--max-inbox-messages", "2"}
	_, addr := brgServe(t, A, "127.0.0.1:0", sm)
	join := brgJoin(t, B, addr, brgMat(dir, "beta", "alpha"))
	brgAwaitRow(t, B, "reader@alpha", func(r map[string]any) bool { return r["host"] == "alpha" }, "reader@alpha on beta")
	for i := range 2 {
		if r := brgSend(t, B, "b1", "reader@alpha", fmt.Sprintf("fill %d", i)); !r.RemoteStored {
			t.Fatalf("fill %d: %+v", i, r)
		}
	}
	r := B.Run("-s", "b1", "send", "reader@alpha", "one too many")
	if r.Code != 1 || !strings.Contains(r.Stderr, "quota_exceeded") || !strings.Contains(r.Stderr, "beta has 2 unread messages") {
		t.Fatalf("send over the quota: exit %d, stderr %q", r.Code, r.Stderr)
	}
	// Queued while the link is down, then over the quota: kept, not lost.
	join.Kill()
	brgAwaitRow(t, B, "reader@alpha", func(r map[string]any) bool { return r["connected"] == false }, "reader@alpha down on beta")
	q := brgSend(t, B, "b1", "reader@alpha", "queued over the quota")
	if !q.Queued {
		t.Fatalf("send with the link down: %+v", q)
	}
	brgJoin(t, B, addr, brgMat(dir, "beta", "alpha"))
	Eventually(t, brgWait, func() bool { h := bridgeHost(t, B, "alpha"); return h != nil && h.LinkUp && h.Outbox == 1 }, "the queued message kept in beta's outbox")
	// reader reads (and acks) what filled its inbox: the queued one arrives.
	reader, _ := A.Attach("--resume", readerID)
	for i := range 2 {
		brgExpect(t, reader, fmt.Sprintf("fill %d", i))
	}
	if m := brgNextMsg(t, reader); m["id"] != q.ID+"@beta" {
		t.Fatalf("reader's next message %v, want the queued %s", m, q.ID)
	}
	brgMarker(t, B, "b1", "reader@alpha", reader)
	brgMarker(t, A, "reader", "b1@beta", b1) // and no undeliverable notice came before it

	// A topic state bigger than one NATS message (8 MiB) reads whole, in pages.
	c := brgClient(t, A)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 9 {
		w, err := c.Attach(ctx, intercom.AttachOptions{Name: fmt.Sprintf("writer%d", i), NoDeliver: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Publish(ctx, wire.PublishRequest{From: w.ID(), Topic: "big", Message: strings.Repeat("w", wire.MaxMessageBytes)}); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}
	out := A.OK("--json", "topics", "big")
	var tr wire.TopicsReply
	if err := json.Unmarshal([]byte(out), &tr); err != nil || len(tr.Topics) != 1 || len(tr.Topics[0].Records) != 9 {
		t.Fatalf("topics big: %d bytes, %v, %d topics", len(out), err, len(tr.Topics))
	}
}
