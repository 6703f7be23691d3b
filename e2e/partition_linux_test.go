package e2e

// Partitions between machines (docs/reliability.md): three hosts, alpha
// (the hub), beta and gamma, each a network namespace made by the test
// whose only link is a TUN device on a switch in the test process
// (e2e/internal/netimpair: this kernel has no sch_netem). Their brokers run
// here; their bridges run in the namespaces. While a1@alpha and g1@gamma
// (across the hub) keep sending to b1@beta, the test cuts beta's link and
// the hub's (packets simply stop: no FIN, no RST), flaps beta's link,
// makes it drop 30% of packets and delay them 500 ms (jitter, reordering),
// kills (-9) both joiners during a cut and the hub, and starts them again.
// After the network heals every accepted message has arrived exactly once
// and in order per sender; asks across a cut end with one error line long
// before their timeout; and presence on alpha and gamma, watched all along,
// never loses b1@beta: it shows it unreachable while beta is cut off and
// connected again after. FAULT_LONG=1 (make test-fault) flaps 40 times
// instead of 5 and keeps the loss longer. Needs root, ip and /dev/net/tun
// (skipped otherwise, saying why).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/e2e/internal/netimpair"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

var netnsN atomic.Int64

// partWait bounds each wait for a change of state (a cut noticed, a link
// back): the hosts notice in seconds (presence, 3.5 s), but under the race
// detector, coverage and a CI machine's other tests a reconnect through TLS
// on the netimpair switch can take several times that.
const partWait = 2 * brgWait

// partHost is one machine of the partition test.
type partHost struct {
	name   string
	H      *H
	link   *netimpair.Host
	bridge *Proc
	args   []string // how its bridge is started
}

// inNetns is h.StartBin of bin run inside namespace ns.
func inNetns(h *H, ns, bin string, args ...string) *Proc {
	h.t.Helper()
	c := h.cmd(context.Background(), bin, args...)
	c.Args = append([]string{"ip", "netns", "exec", ns, c.Path}, args...)
	c.Path, _ = exec.LookPath("ip")
	return h.startCmd(c)
}

// partNet makes the switch and the three hosts on it; it skips without
// root, ip or a TUN device.
func partNet(t *testing.T) (alpha, beta, gamma *partHost) {
	t.Helper()
	if err := netimpair.Check(); err != nil {
		t.Skipf("partitions: %v", err)
	}
	n := netnsN.Add(1)
	sw := netimpair.New(int(n), fmt.Sprintf("%d%c", os.Getpid()%100000, 'a'+rune(n%26)))
	t.Cleanup(func() {
		if err := sw.Close(); err != nil {
			t.Errorf("network: %v", err)
		}
		t.Logf("switch: %+v", sw.Stats())
	})
	hosts := make([]*partHost, 3)
	for i, name := range []string{"alpha", "beta", "gamma"} {
		link, err := sw.AddHost(name)
		if err != nil {
			if i == 0 {
				t.Skipf("partitions need network namespaces with a TUN link: %v", err)
			}
			t.Fatal(err)
		}
		hosts[i] = &partHost{name: name, H: brgNewH(t), link: link}
	}
	return hosts[0], hosts[1], hosts[2]
}

// start starts p's bridge with its arguments, in its namespace.
func (p *partHost) start(t *testing.T) {
	t.Helper()
	p.bridge = inNetns(p.H, p.link.Name, "intercom-bridge", p.args...)
	brgRaceCheck(t, p.bridge)
	b := p.bridge
	t.Cleanup(func() {
		if t.Failed() {
			errs := b.Stderr()
			t.Logf("bridge of %s (%v), stderr (last 6000 bytes):\n%s", p.name, b.Cmd.Args[4:6], errs[max(0, len(errs)-6000):])
		}
	})
}

// partSender sends from session from (attached on h) to target, one
// message after another, until stop; each is accepted when the send
// returns (stored at once, queued while the link is down).
type partSender struct {
	label    string
	mu       sync.Mutex
	accepted []string
	failed   map[string]bool // sends that returned an error: may arrive, need not
	remote   int             // sends the remote broker stored before they returned
	sent     map[string]sentNote
}

// sentNote is what a failure report says of one accepted send.
type sentNote struct {
	id     string
	at     time.Time // when the send returned
	stored bool      // the remote broker stored it before it returned
}

func (s *partSender) run(c *intercom.Client, from, to string, stop <-chan struct{}) {
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-time.After(50 * time.Millisecond):
		}
		text := fmt.Sprintf("part %s %d", s.label, i)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		r, err := c.Send(ctx, wire.SendRequest{From: from, To: to, Text: text})
		cancel()
		s.mu.Lock()
		if err == nil {
			s.accepted = append(s.accepted, text)
			s.sent[text] = sentNote{id: r.ID, at: time.Now(), stored: r.RemoteStored}
			if r.RemoteStored {
				s.remote++
			}
		} else {
			s.failed[text] = true
		}
		s.mu.Unlock()
	}
}

func (s *partSender) count() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.accepted) }

func (s *partSender) stored() int { s.mu.Lock(); defer s.mu.Unlock(); return s.remote }

// partReceiver reads b1's events until stop and keeps the texts of the
// senders' messages in the order they arrived.
type partReceiver struct {
	mu   sync.Mutex
	got  []string
	odd  []string // events that are neither such a message nor a failed ask
	done chan struct{}
}

func (r *partReceiver) run(p *Proc, stop <-chan struct{}) {
	defer close(r.done)
	for {
		select {
		case <-stop:
			return
		default:
		}
		l, ok := p.Line(200 * time.Millisecond)
		if !ok {
			continue
		}
		var ev map[string]any
		_ = json.Unmarshal([]byte(l), &ev)
		text := msgStr(ev["text"])
		r.mu.Lock()
		switch {
		case ev["event"] == "message" && strings.HasPrefix(text, "part "):
			r.got = append(r.got, text)
		case ev["event"] == "message" && strings.HasPrefix(text, "there? "):
			// an ask that failed may still arrive: its sender was told it failed
		default:
			r.odd = append(r.odd, l)
		}
		r.mu.Unlock()
	}
}

func (r *partReceiver) count() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.got) }

// partWatch lists h's sessions (the default list, all projects) every
// 100 ms until stop, and records b1@beta's states; a listing without it is
// a failure: a cut host's session must never look gone.
type partWatch struct {
	mu     sync.Mutex
	states map[string]int
	gone   string
}

func (w *partWatch) run(c *intercom.Client, name string, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		rows, err := c.List(ctx, intercom.ListOptions{Scope: "all"})
		cancel()
		if err != nil {
			continue // a slow broker is not the question here
		}
		state := ""
		for _, r := range rows {
			if r.Name == name {
				state = r.State
			}
		}
		w.mu.Lock()
		if state == "" && w.gone == "" {
			w.gone = fmt.Sprintf("%s missing from the list at %s", name, time.Now().Format(time.RFC3339Nano))
		}
		w.states[state]++
		w.mu.Unlock()
	}
}

// partAsk asks b1@beta from a1 on alpha and checks the ask failed with one
// line that is not its own timeout: the partition ended it.
func partAsk(t *testing.T, h *H, what string) {
	t.Helper()
	res := h.Run("-s", "a1", "ask", "b1@beta", "there? "+what, "--timeout", "120s")
	line := strings.TrimSpace(res.Stderr)
	if res.Code == 0 || strings.Contains(line, "\n") || strings.Contains(line, "timed out") || strings.Contains(line, "timeout") {
		t.Fatalf("ask %s: exit %d, stderr %q; want a failure in one line, before the timeout", what, res.Code, res.Stderr)
	}
	t.Logf("ask %s: %s", what, line)
}

// partTest is the running checker: three linked hosts, two senders to
// b1@beta, two watchers of presence.
type partTest struct {
	t                  *testing.T
	alpha, beta, gamma *partHost
	addr               string // the hub's
	b1                 *Proc
	senders            map[string]*partSender
	watches            map[string]*partWatch
	recv               *partReceiver
	stop, stopRecv     chan struct{}
	wg                 sync.WaitGroup
	connected, unreach func(map[string]any) bool
}

// newPartTest links the three hosts through alpha's hub and starts the
// checker: a1@alpha and g1@gamma (across the hub) send to b1@beta; alpha
// and gamma watch their lists.
func newPartTest(t *testing.T) *partTest {
	t.Helper()
	p := &partTest{t: t, senders: map[string]*partSender{}, watches: map[string]*partWatch{}, stop: make(chan struct{}),
		stopRecv: make(chan struct{}), recv: &partReceiver{done: make(chan struct{})},
		connected: func(r map[string]any) bool { return r["connected"] == true },
		unreach:   func(r map[string]any) bool { return r["state"] == wire.StateUnreachable && r["connected"] == false }}
	p.alpha, p.beta, p.gamma = partNet(t)
	alpha, beta, gamma := p.alpha, p.beta, p.gamma
	certs := brgCerts(t, alpha.H, "alpha", "beta", "gamma")
	tlsOf := func(host string) []string {
		return []string{"--cert", filepath.Join(certs, host+".crt"), "--key", filepath.Join(certs, host+".key"),
			"--ca", filepath.Join(certs, "ca.crt"), "--name", host}
	}
	_, ev := alpha.H.Attach("--name", "a1")
	a1 := msgStr(ev["id"])
	p.b1, _ = beta.H.Attach("--name", "b1")
	_, ev = gamma.H.Attach("--name", "g1")
	g1 := msgStr(ev["id"])

	alpha.args = append([]string{"--json", "serve", "--listen", alpha.link.Addr.String() + ":0", "--any-peer"}, tlsOf("alpha")...)
	alpha.start(t)
	ready := alpha.bridge.Event(brgWait)
	p.addr = msgStr(ready["addr"])
	if ready["event"] != "ready" || !strings.HasPrefix(p.addr, alpha.link.Addr.String()+":") {
		t.Fatalf("serve: first event %v", ready)
	}
	alpha.args[3] = p.addr // a restart listens where the others join
	for _, j := range []*partHost{beta, gamma} {
		j.args = append([]string{"--json", "join", p.addr, "--any-peer", "--server-name", "alpha"}, tlsOf(j.name)...)
		j.start(t)
	}
	p.awaitB1(p.connected, "connected")
	brgAwaitRowWithin(t, beta.H, "g1@gamma", p.connected, "g1@gamma connected on beta", partWait)

	for label, from := range map[string]struct {
		h  *H
		id string
	}{"alpha": {alpha.H, a1}, "gamma": {gamma.H, g1}} {
		s := &partSender{label: label, failed: map[string]bool{}, sent: map[string]sentNote{}}
		p.senders[label] = s
		c := brgClient(t, from.h)
		p.wg.Add(1)
		go func() { defer p.wg.Done(); s.run(c, from.id, "b1@beta", p.stop) }()
	}
	for _, w := range []*partHost{alpha, gamma} {
		pw := &partWatch{states: map[string]int{}}
		p.watches[w.name] = pw
		c := brgClient(t, w.H)
		p.wg.Add(1)
		go func() { defer p.wg.Done(); pw.run(c, "b1@beta", p.stop) }()
	}
	go p.recv.run(p.b1, p.stopRecv)
	t.Cleanup(func() {
		select {
		case <-p.stopRecv:
		default:
			close(p.stopRecv)
		}
		<-p.recv.done
	})
	p.sends(5, "before the cuts")
	return p
}

// awaitB1 waits until alpha and gamma list b1@beta as cond wants.
func (p *partTest) awaitB1(cond func(map[string]any) bool, what string) {
	p.t.Helper()
	brgAwaitRowWithin(p.t, p.alpha.H, "b1@beta", cond, "b1@beta "+what+" on alpha", partWait)
	brgAwaitRowWithin(p.t, p.gamma.H, "b1@beta", cond, "b1@beta "+what+" on gamma", partWait)
}

// sends waits until each sender has k more messages accepted.
func (p *partTest) sends(k int, what string) {
	p.t.Helper()
	for label, s := range p.senders {
		n := s.count()
		Eventually(p.t, 2*brgWait, func() bool { return s.count() >= n+k }, "%d sends from %s %s", k, label, what)
	}
}

// received waits until b1 has received k more of the senders' messages:
// traffic crossed beta's link.
func (p *partTest) received(k int, what string) {
	p.t.Helper()
	n := p.recv.count()
	Eventually(p.t, 6*brgWait, func() bool { return p.recv.count() >= n+k }, "%d messages received by b1@beta %s", k, what)
}

// finish stops the checker and checks what it saw: b1@beta never gone
// from alpha's and gamma's lists, unreachable while cut off; every
// accepted message delivered once, in order per sender.
func (p *partTest) finish(summary string) {
	t := p.t
	t.Helper()
	close(p.stop)
	AwaitGroup(t, &p.wg, 60*time.Second, "the senders and watchers to stop")
	for host, w := range p.watches {
		if w.gone != "" {
			t.Errorf("%s: %s (states seen: %v)", host, w.gone, w.states)
		}
		if w.states[wire.StateUnreachable] == 0 {
			t.Errorf("%s never listed b1@beta unreachable (states seen: %v)", host, w.states)
		}
		t.Logf("b1@beta on %s: %v", host, w.states)
	}
	want := 0
	for _, s := range p.senders {
		want += len(s.accepted)
	}
	Eventually(t, 6*brgWait, func() bool { return p.recv.count() >= want }, "b1@beta to receive the %d accepted messages", want)
	close(p.stopRecv)
	<-p.recv.done
	if len(p.recv.odd) > 0 {
		t.Fatalf("b1@beta received %d unexpected events, the first: %s", len(p.recv.odd), p.recv.odd[0])
	}
	next := map[string]int{}
	for _, text := range p.recv.got {
		f := strings.Fields(text)
		s := p.senders[f[1]]
		if len(f) != 3 || s == nil {
			t.Fatalf("b1@beta received %q: not a message of the senders", text)
		}
		if s.failed[text] {
			continue
		}
		if i := next[f[1]]; i >= len(s.accepted) || text != s.accepted[i] {
			p.explainMismatch(s, i)
			t.Fatalf("b1@beta received %q from %s, want its accepted message %d of %d (a duplicate, a loss or a reordering)", text, f[1], i, len(s.accepted))
		}
		next[f[1]]++
	}
	brgMarker(t, p.alpha.H, "a1", "b1@beta", p.b1)
	brgMarker(t, p.gamma.H, "g1", "b1@beta", p.b1)
	a, g := p.senders["alpha"], p.senders["gamma"]
	t.Logf("%d messages accepted (alpha %d, gamma %d across the hub; %d and %d stored on beta before their send returned) through %s: each delivered once, in order (failed sends: alpha %d, gamma %d)",
		want, len(a.accepted), len(g.accepted), a.remote, g.remote, summary, len(a.failed), len(g.failed))
}

// explainMismatch logs what a failure of finish needs to be told apart:
// where each of s's accepted messages around index i arrived at b1 (its
// positions among what b1 received, none for a loss, two for a
// duplicate), when its send returned and with what, and the broker's
// trace of the one expected.
func (p *partTest) explainMismatch(s *partSender, i int) {
	t := p.t
	pos := map[string][]int{}
	for k, text := range p.recv.got {
		pos[text] = append(pos[text], k)
	}
	for k := max(0, i-3); k < min(len(s.accepted), i+4); k++ {
		text := s.accepted[k]
		n := s.sent[text]
		t.Logf("accepted %d %q: id %s, returned %s (remote stored: %v), received at %v", k, text, n.id, n.at.Format("15:04:05.000"), n.stored, pos[text])
	}
	if i >= len(s.accepted) {
		return
	}
	h := p.alpha.H
	if s.label == "gamma" {
		h = p.gamma.H
	}
	id := s.sent[s.accepted[i]].id
	r := h.Run("trace", id)
	t.Logf("trace %s on %s: exit %d\n%s%s", id, s.label, r.Code, r.Stdout, r.Stderr)
	r = p.beta.H.Run("trace", id+"@"+s.label)
	t.Logf("trace %s@%s on beta: exit %d\n%s%s", id, s.label, r.Code, r.Stdout, r.Stderr)
}

func TestPartitionBridgeLink(t *testing.T) {
	t.Parallel()
	// The step the test is in, named again as the last line of a failure:
	// the hosts' logs printed on failure can push the first error out of a
	// CI log's excerpt.
	var step atomic.Pointer[string]
	at := func(s string) {
		s = time.Now().Format("15:04:05.000") + " " + s
		step.Store(&s)
		t.Log("step:", s)
	}
	t.Cleanup(func() {
		if s := step.Load(); t.Failed() && s != nil {
			t.Logf("TestPartitionBridgeLink failed in the step begun at %s (its first error is above the hosts' logs)", *s)
		}
	})
	at("linking alpha, beta and gamma")
	p := newPartTest(t)
	alpha, beta, gamma := p.alpha, p.beta, p.gamma
	long := os.Getenv("FAULT_LONG") != "" && os.Getenv("FAULT_SHORT") == ""

	at("1. beta cut off")
	// 1. beta cut off, long enough to be noticed: an ask sent at once ends
	// when the cut is noticed, one sent after is refused; b1@beta is
	// unreachable on alpha and gamma (in the default list too), not gone.
	beta.link.Cut(true)
	partAsk(t, alpha.H, "as beta is cut off")
	p.awaitB1(p.unreach, "unreachable")
	if r := Row(alpha.H.Sessions("--scope", "all"), "b1@beta"); r == nil || r["state"] != wire.StateUnreachable {
		t.Fatalf("default list on alpha during the cut: b1@beta %v, want it listed unreachable", r)
	}
	partAsk(t, alpha.H, "across the noticed cut")
	p.sends(5, "while beta is cut off")
	beta.link.Cut(false)
	p.awaitB1(p.connected, "connected after the heal")

	at("2. the hub cut off")
	// 2. The hub cut off: both joiners lose it.
	alpha.link.Cut(true)
	brgAwaitRowWithin(t, gamma.H, "b1@beta", p.unreach, "b1@beta unreachable on gamma while the hub is cut off", partWait)
	p.sends(5, "while the hub is cut off")
	alpha.link.Cut(false)
	p.awaitB1(p.connected, "connected after the hub's heal")

	at("3. flapping link")
	// 3. A flapping link: short cuts, shorter than the bridge notices.
	flaps := 5
	if long {
		flaps = 40
	}
	for range flaps {
		beta.link.Cut(true)
		time.Sleep(300 * time.Millisecond) // the shape of the flap, not a wait for an event
		beta.link.Cut(false)
		time.Sleep(300 * time.Millisecond)
	}
	p.sends(5, "after the flapping")

	at("4. lossy, slow link")
	// 4. A bad link, then a cut on top of it.
	lossy := 5
	if long {
		lossy = 20
	}
	partLossy(p, lossy)

	at("5. joiners killed during a cut")
	// 5. kill -9 of both joiners during a cut, new ones after the heal.
	beta.link.Cut(true)
	gamma.link.Cut(true)
	beta.bridge.Kill()
	gamma.bridge.Kill()
	brgAwaitRowWithin(t, alpha.H, "b1@beta", p.unreach, "b1@beta unreachable on alpha after its bridge died", partWait)
	p.sends(5, "while the joiners are dead")
	beta.link.Cut(false)
	gamma.link.Cut(false)
	beta.start(t)
	gamma.start(t)
	p.awaitB1(p.connected, "connected through the new joiners")
	p.sends(5, "after the new joiners")

	at("6. hub killed")
	// 6. kill -9 of the hub, a new one on the same address.
	alpha.bridge.Kill()
	p.awaitB1(p.unreach, "unreachable after the hub died")
	p.sends(5, "while the hub is dead")
	alpha.start(t)
	if ev := alpha.bridge.Event(brgWait); ev["event"] != "ready" || ev["addr"] != p.addr {
		t.Fatalf("hub restarted: first event %v", ev)
	}
	p.awaitB1(p.connected, "connected through the new hub")
	p.sends(5, "after the new hub")
	at("checking what arrived")
	p.finish(fmt.Sprintf("cuts of beta and of the hub, %d flaps, 30%% loss and 500 ms delay, killed joiners and a killed hub", flaps))
}

// partLossy: beta's link drops 30% of the packets it sends and delays
// them 500 ms with 200 ms of jitter, some reordered (tc netem on its
// interface would do this), while k of the senders' messages cross it;
// then it is cut on top of that, and restored.
func partLossy(p *partTest, k int) {
	p.t.Helper()
	bad := netimpair.Impairment{Loss: 0.3, Delay: 500 * time.Millisecond, Jitter: 200 * time.Millisecond, Reorder: 0.05}
	p.beta.link.Set(bad)
	p.received(k, "over the lossy, slow link")
	p.beta.link.Cut(true)
	p.awaitB1(p.unreach, "unreachable on the lossy link cut")
	p.sends(3, "while the lossy link is cut")
	p.beta.link.Cut(false)
	p.received(3, "over the lossy link after the cut")
	p.beta.link.Set(netimpair.Impairment{})
	p.awaitB1(p.connected, "connected once the link is clean")
}
