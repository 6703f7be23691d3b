package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/intercom-dev/intercom/internal/certs"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Bridge scenarios: brokers of several "machines" on this one, linked by
// intercom-bridge through an embedded hub (the first host serves, the
// others join it) on loopback. Quotas are raised so that the bench measures
// the link, not the rate limits.

const (
	rowBridgeLatency = "bridge: send→delivered across the hub (joiner → joiner)"
	rowBridgeFanin   = "bridge: fan-in, 4 hosts → 1 across the hub (delivered+acked)"
	rowBridgeCPU     = "bridge: fan-in, CPU per message (5 brokers and 5 bridges together)"
)

var benchQuotas = []string{"--max-msgs-per-sec", "1000000", "--max-bytes-per-sec", "1048576MiB",
	"--max-inbox-messages", "10000000", "--max-inbox-bytes", "1048576MiB"}

// bridgeMesh is n brokers and their bridges.
type bridgeMesh struct {
	h       *procOwner
	names   []string
	brokers []*broker
	bridges []*proc
}

// stop ends the bridges first: a bridge whose broker went away would start
// another.
func (m *bridgeMesh) stop() {
	for _, p := range m.bridges {
		m.h.stop(p, 10*time.Second)
	}
	for _, b := range m.brokers {
		b.Stop()
	}
}

// CPU is the CPU time of every broker and bridge of the mesh so far.
func (m *bridgeMesh) CPU() (time.Duration, error) {
	var sum time.Duration
	for _, p := range m.bridges {
		d, err := p.CPU()
		if err != nil {
			return 0, err
		}
		sum += d
	}
	for _, b := range m.brokers {
		d, err := b.CPU()
		if err != nil {
			return 0, err
		}
		sum += d
	}
	return sum, nil
}

// startMesh starts n brokers and links them: host 0 serves, the others join.
func (h *procOwner) startMesh(ctx context.Context, name string, n int) (*bridgeMesh, error) {
	bin, err := resolveBridge(ctx, h.root)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(h.root, name+"-ca")
	if err := certs.Init(dir); err != nil {
		return nil, err
	}
	m := &bridgeMesh{h: h}
	for i := range n {
		host := fmt.Sprintf("h%d", i)
		if err := certs.Issue(dir, host, time.Now().Add(-time.Minute), 24*time.Hour); err != nil {
			return nil, err
		}
		b, err := h.startBroker(ctx, name+"-"+host)
		if err != nil {
			m.stop()
			return nil, err
		}
		m.names, m.brokers = append(m.names, host), append(m.brokers, b)
	}
	tls := func(host string) []string {
		return append([]string{"--cert", filepath.Join(dir, host+".crt"), "--key", filepath.Join(dir, host+".key"),
			"--ca", filepath.Join(dir, certs.CACert), "--name", host, "--any-peer"}, benchQuotas...)
	}
	ev, err := m.startBridge(ctx, bin, m.brokers[0], append([]string{"--json", "serve", "--listen", "127.0.0.1:0"}, tls("h0")...))
	if err != nil {
		m.stop()
		return nil, err
	}
	for i := 1; i < n; i++ {
		if _, err := m.startBridge(ctx, bin, m.brokers[i], append([]string{"--json", "join", ev["addr"], "--server-name", "h0"}, tls(m.names[i])...)); err != nil {
			m.stop()
			return nil, err
		}
	}
	return m, nil
}

// startBridge runs intercom-bridge for broker b and waits for its ready
// event.
func (m *bridgeMesh) startBridge(ctx context.Context, bin string, b *broker, args []string) (map[string]string, error) {
	h := m.h
	logf, err := os.OpenFile(filepath.Join(b.layout.Home, "bridge.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "INTERCOM_HOME="+b.layout.Home, "INTERCOM_SOCKET="+b.layout.Socket)
	cmd.Stderr = logf
	cmd.SysProcAttr = childAttr()
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start bridge: %w", err)
	}
	p := &proc{name: "bridge", pid: cmd.Process.Pid, done: make(chan struct{})}
	h.adopt(p)
	m.bridges = append(m.bridges, p)
	events := make(chan map[string]string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var ev map[string]string
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				select {
				case events <- ev:
				default:
				}
			}
		}
		_ = cmd.Wait()
		close(p.done)
	}()
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	for {
		select {
		case ev := <-events:
			if ev["event"] == "ready" {
				return ev, nil
			}
		case <-p.done:
			return nil, fmt.Errorf("bridge exited: %s", tailFile(filepath.Join(b.layout.Home, "bridge.log"), 5))
		case <-t.C:
			return nil, fmt.Errorf("bridge not ready in 30s: %s", tailFile(filepath.Join(b.layout.Home, "bridge.log"), 5))
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// resolveBridge is $INTERCOM_BRIDGE, else intercom-bridge built next to the
// broker.
func resolveBridge(ctx context.Context, root string) (string, error) {
	if p := os.Getenv("INTERCOM_BRIDGE"); p != "" {
		return filepath.Abs(p)
	}
	dir := filepath.Join(root, "bin")
	path := filepath.Join(dir, "intercom-bridge")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", dir+"/", "github.com/intercom-dev/intercom/cmd/intercom-bridge")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build bridge: %v: %s", err, out)
	}
	return path, nil
}

// awaitRemote waits until c lists target as a connected session.
func awaitRemote(ctx context.Context, c *intercom.Client, target string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		rows, err := c.List(ctx, intercom.ListOptions{Scope: "all"})
		if err == nil {
			for _, r := range rows {
				if r.Target == target && r.Connected {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not listed within %s", target, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// benchBridgeLatency: serial sends from a session of h1 to a holder on h2,
// through h0's hub; each waits for its arrival before the next.
func benchBridgeLatency(ctx context.Context, h *procOwner, cfg config, r *Results) error {
	m, err := h.startMesh(ctx, "bridge-latency", 3)
	if err != nil {
		return err
	}
	defer m.stop()
	ca, err := m.brokers[1].Connect(ctx, "alice")
	if err != nil {
		return err
	}
	defer ca.Close()
	cb, err := m.brokers[2].Connect(ctx, "bob")
	if err != nil {
		return err
	}
	defer cb.Close()
	alice, err := ca.Attach(ctx, intercom.AttachOptions{Name: "alice", NoDeliver: true})
	if err != nil {
		return err
	}
	bob, err := cb.Attach(ctx, intercom.AttachOptions{Name: "bob"})
	if err != nil {
		return err
	}
	if err := awaitRemote(ctx, ca, "bob@h2", cfg.StepTimeout); err != nil {
		return err
	}
	warm := max(5, cfg.BridgeLatencyN/20)
	total := warm + cfg.BridgeLatencyN
	rcv := newReceiver(cb, bob, total)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rcv.start(rctx)
	sent := newSentIDs(total)
	delivered := make([]time.Duration, 0, cfg.BridgeLatencyN)
	for i := range total {
		t0 := time.Now()
		rep, err := ca.Send(ctx, wire.SendRequest{From: alice.ID(), To: "bob@h2", Text: text(i, cfg.TextBytes)})
		if err != nil {
			return fmt.Errorf("send %d: %w", i, err)
		}
		if !rep.RemoteStored {
			return fmt.Errorf("send %d was not stored remotely within its wait: %+v", i, rep)
		}
		rep.ID += "@h1"
		sent.add(rep, i)
		at, err := rcv.waitArrival(ctx, i, cfg.StepTimeout)
		if err != nil {
			return err
		}
		if i >= warm {
			delivered = append(delivered, at.Sub(t0))
		}
	}
	if err := rcv.waitAcked(ctx, cfg.StepTimeout); err != nil {
		return err
	}
	if err := errors.Join(sent.check(), rcv.verify(ctx, sent.ids)); err != nil {
		return err
	}
	r.lat(rowBridgeLatency, "ms", delivered)
	return nil
}

// benchBridgeFanin: sessions on h0..h3 (the hub's host among them) send to
// one holder on h4, each pipelined (SendAsync) with cfg.BridgeDepth sends
// in flight (4 × 200: as many as the local fan-in's 50 × 16); messages per
// second until every one is delivered and acked, exactly once.
func benchBridgeFanin(ctx context.Context, h *procOwner, cfg config, r *Results) error {
	m, err := h.startMesh(ctx, "bridge-fanin", 5)
	if err != nil {
		return err
	}
	defer m.stop()
	cs, err := m.brokers[4].Connect(ctx, "sink")
	if err != nil {
		return err
	}
	defer cs.Close()
	sink, err := cs.Attach(ctx, intercom.AttachOptions{Name: "sink"})
	if err != nil {
		return err
	}
	type sender struct {
		c    *intercom.Client
		id   string
		host string
	}
	var ss []sender
	for i := range 4 {
		c, err := m.brokers[i].Connect(ctx, "sender")
		if err != nil {
			return err
		}
		defer c.Close()
		s, err := c.Attach(ctx, intercom.AttachOptions{Name: "sender", NoDeliver: true})
		if err != nil {
			return err
		}
		if err := awaitRemote(ctx, c, "sink@h4", cfg.StepTimeout); err != nil {
			return err
		}
		ss = append(ss, sender{c, s.ID(), m.names[i]})
	}
	per := cfg.BridgeFaninPer
	total := len(ss) * per
	rcv := newReceiver(cs, sink, total)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rcv.start(rctx)
	sent := newSentIDs(total)
	cpu0, err := m.CPU()
	if err != nil {
		return err
	}
	start := time.Now()
	err = pipelinedAsync(ctx, len(ss), per, cfg.BridgeDepth, func(k, idx int) (*intercom.SendFuture, error) {
		return ss[k].c.SendAsync(wire.SendRequest{From: ss[k].id, To: "sink@h4", Text: text(idx, cfg.TextBytes)})
	}, func(rep wire.SendReply, idx int) {
		rep.ID += "@" + ss[idx/per].host
		sent.add(rep, idx)
	})
	if err != nil {
		return err
	}
	if err := rcv.waitAcked(ctx, cfg.StepTimeout); err != nil {
		return err
	}
	elapsed := time.Since(start)
	cpu1, err := m.CPU()
	if err != nil {
		return err
	}
	if err := errors.Join(sent.check(), rcv.verify(ctx, sent.ids)); err != nil {
		return err
	}
	r.val(rowBridgeFanin, unitMsgPerSec, float64(total)/elapsed.Seconds())
	r.val(rowBridgeCPU, "us CPU", float64(cpu1-cpu0)/float64(time.Microsecond)/float64(total))
	return nil
}
