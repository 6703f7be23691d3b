package e2e

// Many machines (issue 16): five hosts on this machine (five homes, five
// brokers, five bridges on loopback) through one embedded hub: alpha serves
// with --any-peer and is a host like the others; beta, gamma, delta and
// epsilon join it. docs/bridge.md's hub topology runs these commands.

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

var meshNames = []string{"alpha", "beta", "gamma", "delta", "epsilon"}

// meshHost is one machine of a mesh: its home, bridge and one attached
// session named after it ("s-alpha"…).
type meshHost struct {
	name   string
	H      *H
	bridge *Proc
	s      *Proc
	sid    string
	args   []string // how its bridge was started (for a restart)
}

func (m *meshHost) session() string { return "s-" + m.name }

// target is how other hosts address m's session.
func (m *meshHost) target() string { return m.session() + "@" + m.name }

type mesh struct {
	t     *testing.T
	dir   string
	addr  string
	hosts []*meshHost
}

func (x *mesh) host(name string) *meshHost {
	for _, h := range x.hosts {
		if h.name == name {
			return h
		}
	}
	x.t.Fatalf("no host %s", name)
	return nil
}

// newMesh makes the hosts' homes, certificates and sessions; link joins
// them (through the hub, or a NATS cluster).
func newMesh(t *testing.T) *mesh {
	t.Helper()
	x := &mesh{t: t}
	for _, n := range meshNames {
		x.hosts = append(x.hosts, &meshHost{name: n, H: brgNewH(t)})
	}
	x.dir = brgCerts(t, x.hosts[0].H, append(append([]string{}, meshNames...), "nats")...)
	if r := brgRun(t, x.hosts[0].H, "certs", "crl", "--dir", x.dir); r.Code != 0 {
		t.Fatalf("certs crl: %+v", r)
	}
	for _, h := range x.hosts {
		var ev map[string]any
		h.s, ev = h.H.Attach("--name", h.session())
		h.sid = msgStr(ev["id"])
	}
	return x
}

// tls is host's certificate flags.
func (x *mesh) tls(host string) []string {
	return []string{"--cert", filepath.Join(x.dir, host+".crt"), "--key", filepath.Join(x.dir, host+".key"),
		"--ca", filepath.Join(x.dir, "ca.crt"), "--name", host}
}

// viaHub starts alpha's hub and the others' joins, as docs/bridge.md says.
func (x *mesh) viaHub(listen string) {
	t := x.t
	t.Helper()
	hub := x.hosts[0]
	hub.args = append([]string{"--json", "serve", "--listen", listen, "--any-peer", "--export", "shared"}, x.tls("alpha")...)
	hub.bridge = hub.H.StartBin("intercom-bridge", hub.args...)
	brgRaceCheck(t, hub.bridge)
	ev := hub.bridge.Event(brgWait)
	if ev["event"] != "ready" {
		t.Fatalf("hub: %v", ev)
	}
	x.addr = msgStr(ev["addr"])
	hub.args[3] = x.addr // a restart listens where the others join
	for _, h := range x.hosts[1:] {
		x.join(h, x.addr, "alpha")
	}
	x.awaitFull()
}

// join starts h's bridge joining addr (a hub, or NATS URLs) and waits for
// its ready event.
func (x *mesh) join(h *meshHost, addr, server string) {
	x.t.Helper()
	h.args = append([]string{"--json", "join", addr, "--any-peer", "--server-name", server, "--export", "shared"}, x.tls(h.name)...)
	h.bridge = h.H.StartBin("intercom-bridge", h.args...)
	brgRaceCheck(x.t, h.bridge)
	for {
		ev := h.bridge.Event(brgWait)
		if ev["event"] == "ready" {
			return
		}
		if ev["event"] != "connecting" && ev["event"] != "refused" {
			x.t.Fatalf("join %s: %v", h.name, ev)
		}
	}
}

// restart starts h's bridge again as before.
func (x *mesh) restart(h *meshHost) {
	x.t.Helper()
	h.bridge = h.H.StartBin("intercom-bridge", h.args...)
	brgRaceCheck(x.t, h.bridge)
}

// awaitFull waits until every host lists every other host's session as
// connected.
func (x *mesh) awaitFull() {
	x.t.Helper()
	for _, h := range x.hosts {
		for _, o := range x.hosts {
			if o != h {
				brgAwaitRow(x.t, h.H, o.target(), func(r map[string]any) bool { return r["connected"] == true },
					fmt.Sprintf("%s on %s", o.target(), h.name))
			}
		}
	}
}

// client connects the test to h's broker and registers a sending session.
func (x *mesh) sender(h *meshHost, name string) (*intercom.Client, string) {
	x.t.Helper()
	c := brgClient(x.t, h.H)
	ctx, cancel := context.WithTimeout(context.Background(), brgWait)
	defer cancel()
	s, err := c.Attach(ctx, intercom.AttachOptions{Name: name, NoDeliver: true, Cwd: h.H.Cwd})
	if err != nil {
		x.t.Fatal(err)
	}
	return c, s.ID()
}

// TestBridgeMeshAnyToAny: five hosts through the hub. Every host lists
// every other's session as name@host (the hub's own included); a message
// from each host to each other host arrives once with the sender as
// name@host; asks and replies go around the ring (hub to joiner, joiner
// to hub, joiner to joiner); a topic of one joiner is used by another
// joiner and the hub; a host with a valid certificate for beta can neither
// receive what is meant for gamma nor publish as gamma; and 1,000 sessions
// of one host are listed by another.
func TestBridgeMeshAnyToAny(t *testing.T) {
	t.Parallel()
	x := newMesh(t)
	x.viaHub("127.0.0.1:0")
	meshAnyToAny(t, x)
	meshNoImpersonation(t, x, x.addr, "alpha", true)
	meshThousandSessions(t, x)
}

// meshAnyToAny sends from every host to every other, asks around the ring
// and shares a topic.
func meshAnyToAny(t *testing.T, x *mesh) {
	t.Helper()
	sent := map[string]map[string]bool{} // receiver → texts
	for _, to := range x.hosts {
		sent[to.name] = map[string]bool{}
	}
	for _, from := range x.hosts {
		for _, to := range x.hosts {
			if from == to {
				continue
			}
			text := fmt.Sprintf("from %s to %s", from.name, to.name)
			r := brgSend(t, from.H, from.session(), to.target(), text)
			if !r.RemoteStored || r.To.ID != to.sid+"@"+to.name {
				t.Fatalf("%s: %+v", text, r)
			}
			sent[to.name][text] = true
		}
	}
	for _, to := range x.hosts {
		for range 4 {
			m := brgNextMsg(t, to.s)
			text := msgStr(m["text"])
			from := strings.TrimPrefix(strings.Fields(text)[1], "")
			if !sent[to.name][text] || msgSub(m, "from")["name"] != "s-"+from+"@"+from {
				t.Fatalf("%s got %v (sent to it: %v)", to.name, m, sent[to.name])
			}
			delete(sent[to.name], text)
		}
	}
	for i, from := range x.hosts {
		to := x.hosts[(i+1)%len(x.hosts)]
		brgMarker(t, from.H, from.session(), to.target(), to.s) // nothing twice
	}
	// Asks around the ring.
	for i, from := range x.hosts {
		to := x.hosts[(i+1)%len(x.hosts)]
		q := "question from " + from.name
		ask := from.H.Start("-s", from.session(), "--json", "ask", to.target(), q)
		m := brgExpect(t, to.s, q)
		if m["expects_reply"] != true {
			t.Fatalf("ask as delivered: %v", m)
		}
		to.H.OK("-s", to.session(), "reply", "answer from "+to.name)
		out, code := msgExit(t, ask)
		if code != 0 || !strings.Contains(out, "answer from "+to.name) {
			t.Fatalf("ask %s → %s: exit %d, %s", from.name, to.name, code, out)
		}
	}
	// A topic of delta, used by gamma and the hub.
	gamma, delta, alpha := x.host("gamma"), x.host("delta"), x.host("alpha")
	gamma.H.OK("-s", gamma.session(), "subscribe", "shared/deploy@delta")
	alpha.H.OK("-s", alpha.session(), "publish", "shared/deploy@delta", "--event", "blocker", "stop the deploy")
	// The publisher is alpha's session, relayed by delta (the topic's host).
	ev := gamma.s.Event(brgWait)
	if ev["event"] != wire.EventBlocker || ev["topic"] != "shared/deploy@delta" || ev["text"] != "stop the deploy" ||
		msgSub(ev, "from")["name"] != "s-alpha@alpha@delta" {
		t.Fatalf("gamma's wake-up: %v", ev)
	}
	if ti := topicState(t, delta.H, "shared/deploy"); subscriber(ti, gamma.session()+"@gamma") == nil {
		t.Fatalf("delta's topic lacks gamma's subscriber: %+v", ti)
	}
}

// meshNoImpersonation: with beta's valid certificate, raw NATS on the
// mesh's server cannot receive gamma's requests or inbox replies, nor
// publish requests or presence as gamma; gamma's session receives nothing
// from such attempts (a marker from delta is its next event).
func meshNoImpersonation(t *testing.T, x *mesh, addr, server string, tlsFirst bool) {
	t.Helper()
	hp := startHostile(t, "-addr", addr, "-cert", filepath.Join(x.dir, "beta.crt"), "-key", filepath.Join(x.dir, "beta.key"),
		"-ca", filepath.Join(x.dir, "ca.crt"), "-name", "beta", "-victim", "delta", "-server-name", server, fmt.Sprintf("-tls-first=%v", tlsFirst))
	for _, subj := range []string{"icb.req.gamma.*.*", "icb.req.gamma.delta.deliver", "icb.inbox.gamma.>", ">"} {
		hp.mustRefuse("receive gamma's: subscribe "+subj, map[string]any{"do": "subscribe", "subject": subj})
	}
	gamma, delta := x.host("gamma"), x.host("delta")
	forged, _ := json.Marshal(map[string]any{"host": "gamma", "message": map[string]any{"id": "forged1",
		"from": map[string]any{"id": gamma.sid, "name": gamma.session()}, "to": delta.session(), "text": "as gamma", "delivery": "steer"}})
	for _, subj := range []string{"icb.req.delta.gamma.deliver", "icb.pres.gamma"} {
		hp.mustRefuse("inject as gamma: publish "+subj, map[string]any{"do": "publish", "subject": subj, "data": string(forged)})
	}
	if out := hp.do(map[string]any{"do": "request", "op": "deliver", "from": "gamma", "body": json.RawMessage(forged), "wait_ms": 2000}); out["reply"] != nil {
		t.Fatalf("a request published as gamma was answered: %v", out)
	}
	brgMarker(t, x.host("epsilon").H, "s-epsilon", delta.target(), delta.s)
	brgMarker(t, delta.H, delta.session(), gamma.target(), gamma.s)
}

// meshThousandSessions: beta holds 1,000 more sessions; epsilon lists them
// all as name@beta.
func meshThousandSessions(t *testing.T, x *mesh) {
	t.Helper()
	beta, eps := x.host("beta"), x.host("epsilon")
	c := brgClient(t, beta.H)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i := range 1000 {
		if _, err := c.Attach(ctx, intercom.AttachOptions{Name: fmt.Sprintf("w%04d", i), NoDeliver: true, Cwd: beta.H.Cwd}); err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
	}
	count := func() int {
		n := 0
		for _, r := range eps.H.Sessions("--scope", "all") {
			if r["host"] == "beta" && strings.HasPrefix(msgStr(r["name"]), "w") && r["connected"] == true {
				n++
			}
		}
		return n
	}
	Eventually(t, time.Minute, func() bool { return count() == 1000 }, "1,000 sessions of beta on epsilon (last count %d)", count())
	if out := eps.H.OK("list", "--scope", "all"); !strings.Contains(out, "w0999@beta") || !strings.Contains(out, "w0000@beta") {
		t.Fatalf("human list lacks beta's sessions")
	}
	brgSend(t, eps.H, eps.session(), "w0500@beta", "to one of a thousand")
}

// meshStream sends n messages from each of the senders' hosts to the
// session of to, through test clients, and returns the accepted ids in
// order per sender.
func meshStream(t *testing.T, x *mesh, senders []*meshHost, to *meshHost, n int, label string) map[string][]string {
	t.Helper()
	ids := map[string][]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, from := range senders {
		c, sid := x.sender(from, "stream-"+from.name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				ctx, cancel := context.WithTimeout(context.Background(), brgWait)
				r, err := c.Send(ctx, wire.SendRequest{From: sid, To: to.target(), Text: fmt.Sprintf("%s %s %d", label, from.name, i)})
				cancel()
				if err != nil {
					t.Errorf("send %d from %s: %v", i, from.name, err)
					return
				}
				mu.Lock()
				ids[from.name] = append(ids[from.name], r.ID+"@"+from.name)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return ids
}

// meshReceive reads p's messages until every accepted id arrived; each must
// arrive once and, per sender, in order.
func meshReceive(t *testing.T, p *Proc, ids map[string][]string, wait time.Duration) {
	t.Helper()
	want := 0
	next := map[string]int{}
	for _, l := range ids {
		want += len(l)
	}
	for got := 0; got < want; got++ {
		ev := p.Event(wait)
		if ev["event"] != "message" {
			t.Fatalf("event %v, want a message", ev)
		}
		f := strings.Fields(msgStr(ev["text"]))
		if len(f) != 3 {
			t.Fatalf("unexpected message %v", ev)
		}
		from := f[1]
		i := next[from]
		if i >= len(ids[from]) || ev["id"] != ids[from][i] {
			t.Fatalf("from %s: message %v, want %d-th accepted id (of %d)", from, ev, i, len(ids[from]))
		}
		next[from]++
	}
}

// TestBridgeMeshHubKilled: the hub's bridge is killed (SIGKILL) while four
// hosts stream to the hub host and to each other, and restarted on the same
// address: every accepted message arrives exactly once, in order per
// sender. Then a joiner's bridge goes silent (SIGKILL): the others show its
// session disconnected, an ask waiting on it ends with peer_disconnected
// long before its timeout, messages sent to it meanwhile wait, and when it
// comes back they arrive once.
func TestBridgeMeshHubKilled(t *testing.T) {
	t.Parallel()
	x := newMesh(t)
	x.viaHub("127.0.0.1:0")
	alpha, beta, gamma, delta, eps := x.host("alpha"), x.host("beta"), x.host("gamma"), x.host("delta"), x.host("epsilon")
	const n = 40
	type stream struct {
		to  *meshHost
		ids map[string][]string
	}
	var streams []stream
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, to := range []*meshHost{alpha, eps} {
		var from []*meshHost
		for _, h := range []*meshHost{beta, gamma, delta, eps} {
			if h != to {
				from = append(from, h)
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids := meshStream(t, x, from, to, n, "stream")
			mu.Lock()
			streams = append(streams, stream{to, ids})
			mu.Unlock()
		}()
	}
	// Kill the hub once the streams are under way.
	first := alpha.s.Event(brgWait)
	alpha.bridge.Kill()
	t.Logf("hub killed after alpha printed %v", first["text"])
	x.restart(alpha)
	if ev := alpha.bridge.Event(brgWait); ev["event"] != "ready" || ev["addr"] != x.addr {
		t.Fatalf("hub restart: %v", ev)
	}
	wg.Wait()
	for _, s := range streams {
		if s.to == alpha { // its first message was read above
			f := strings.Fields(msgStr(first["text"]))
			if len(f) != 3 || s.ids[f[1]][0] != first["id"] {
				t.Fatalf("alpha's first message %v is not a stream's first", first)
			}
			s.ids[f[1]] = s.ids[f[1]][1:]
		}
		meshReceive(t, s.to.s, s.ids, brgWait)
	}
	x.awaitFull()
	for _, h := range []*meshHost{alpha, eps} {
		brgMarker(t, beta.H, beta.session(), h.target(), h.s)
	}

	// A silent joiner: delta's bridge dies without a word.
	ask := gamma.H.Start("-s", gamma.session(), "--json", "ask", "--timeout", "10m", delta.target(), "still there?")
	brgExpect(t, delta.s, "still there?")
	delta.bridge.Kill()
	start := time.Now()
	out, code := msgExit(t, ask)
	var res struct {
		Reason string `json:"reason"`
	}
	if code == 0 || json.Unmarshal([]byte(out), &res) != nil || res.Reason != "peer_disconnected" || time.Since(start) > time.Minute {
		t.Fatalf("ask waiting on silent delta: exit %d, %s", code, out)
	}
	for _, h := range []*meshHost{alpha, beta, eps} {
		brgAwaitRow(t, h.H, delta.target(), func(r map[string]any) bool { return r["connected"] == false }, delta.target()+" disconnected on "+h.name)
	}
	var queued []string
	for _, from := range []*meshHost{alpha, beta, eps} {
		r := brgSend(t, from.H, from.session(), delta.target(), "while delta is silent, from "+from.name)
		if !r.Queued {
			t.Fatalf("send to silent delta from %s: %+v", from.name, r)
		}
		queued = append(queued, r.ID+"@"+from.name)
	}
	// intercom-bridge status shows it: the link, the hosts, outbox depths.
	for _, from := range []*meshHost{alpha, beta} {
		r := brgRun(t, from.H, "--json", "status")
		var st wire.BridgeStatusReply
		if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &st) != nil || st.Bridge == nil || !st.Bridge.Connected || st.Bridge.Name != from.name {
			t.Fatalf("status on %s: %+v", from.name, r)
		}
		hosts := map[string]wire.BridgeHostStatus{}
		for _, h := range st.Hosts {
			hosts[h.Host] = h
		}
		if d := hosts["delta"]; d.LinkUp || d.Outbox != 1 || !hosts["gamma"].LinkUp || hosts["gamma"].Sessions < 1 {
			t.Fatalf("status on %s: hosts %+v", from.name, st.Hosts)
		}
		if human := brgRun(t, from.H, "status").Stdout; !strings.Contains(human, "• delta — down") || !strings.Contains(human, "outbox 1") {
			t.Fatalf("human status on %s:\n%s", from.name, human)
		}
	}
	x.restart(delta)
	got := map[string]bool{}
	for range queued {
		m := brgNextMsg(t, delta.s)
		got[msgStr(m["id"])] = true
	}
	for _, id := range queued {
		if !got[id] {
			t.Fatalf("delta got %v, want %v", got, queued)
		}
	}
	x.awaitFull()
	brgMarker(t, gamma.H, gamma.session(), delta.target(), delta.s)
}

// TestBridgeMeshRevokedHost: delta's certificate is revoked while five
// hosts are linked: the hub closes delta's link within seconds and refuses
// its reconnections, the others show delta's session disconnected and keep
// talking to each other, and sends to delta queue.
func TestBridgeMeshRevokedHost(t *testing.T) {
	t.Parallel()
	x := newMesh(t)
	x.viaHub("127.0.0.1:0")
	alpha, beta, gamma, delta := x.host("alpha"), x.host("beta"), x.host("gamma"), x.host("delta")
	if r := brgRun(t, alpha.H, "certs", "revoke", "--dir", x.dir, "--name", "delta"); r.Code != 0 {
		t.Fatalf("revoke delta: %+v", r)
	}
	brgAwaitLog(t, alpha.bridge, 0, "closing link", `certificate of \"delta\" is revoked`)
	brgAwaitLog(t, alpha.bridge, 0, "link refused", `certificate of \"delta\" is revoked`)
	for _, h := range []*meshHost{alpha, beta, gamma} {
		brgAwaitRow(t, h.H, delta.target(), func(r map[string]any) bool { return r["connected"] == false }, delta.target()+" disconnected on "+h.name)
	}
	if r := brgSend(t, beta.H, beta.session(), delta.target(), "to revoked delta"); !r.Queued || r.RemoteStored {
		t.Fatalf("send to revoked delta: %+v", r)
	}
	for i, from := range []*meshHost{alpha, beta, gamma, x.host("epsilon")} {
		to := []*meshHost{beta, gamma, x.host("epsilon"), alpha}[i]
		brgMarker(t, from.H, from.session(), to.target(), to.s)
	}
	// Nothing reached it: the message to it is still in beta's outbox, and
	// delta's session has printed nothing.
	if h := bridgeHost(t, beta.H, "delta"); h == nil || h.Outbox != 1 || h.LinkUp {
		t.Fatalf("delta on beta: %+v, want down with one message queued", h)
	}
	brgNoneBuffered(t, delta.s)
}

// brgNoneBuffered asserts p has printed nothing not yet read.
func brgNoneBuffered(t *testing.T, p *Proc) {
	t.Helper()
	select {
	case l := <-p.lines:
		t.Fatalf("unexpected output from %v: %s", p.Cmd.Args, l)
	default:
	}
}
