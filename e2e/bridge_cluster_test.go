package e2e

// The team's own NATS as the hub (issue 16): a three-node nats-server
// cluster (the nats-server of our module, built by the test and run as
// separate processes) configured by `intercom-bridge nats-config`, and five
// hosts joining it with tls:// URLs; no intercom-bridge serve anywhere.
// docs/bridge.md's cluster topology runs these commands.

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	natsServerOnce sync.Once
	natsServerPath string
	natsServerErr  error
)

// natsServer builds the nats-server of the module's go.mod version once.
func natsServer(t *testing.T) string {
	t.Helper()
	natsServerOnce.Do(func() {
		natsServerPath = filepath.Join(binDir, "nats-server")
		out, err := exec.Command("go", "build", "-o", natsServerPath, "github.com/nats-io/nats-server/v2").CombinedOutput()
		if err != nil {
			natsServerErr = fmt.Errorf("build nats-server: %v\n%s", err, out)
		}
	})
	if natsServerErr != nil {
		t.Fatal(natsServerErr)
	}
	return natsServerPath
}

// freePorts returns n TCP ports free at the moment.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// natsNode is one nats-server of the cluster.
type natsNode struct {
	name          string
	client, route int
	conf          string
	cmd           *exec.Cmd
	log           string
}

func (n *natsNode) url() string { return fmt.Sprintf("tls://127.0.0.1:%d", n.client) }

// natsCluster writes each node's configuration with `intercom-bridge
// nats-config` (every host certificate of the CA may join) and starts the
// three nodes.
func natsCluster(t *testing.T, x *mesh) []*natsNode {
	t.Helper()
	bin := natsServer(t)
	ports := freePorts(t, 6)
	var nodes []*natsNode
	for i := range 3 {
		nodes = append(nodes, &natsNode{name: fmt.Sprintf("n%d", i+1), client: ports[2*i], route: ports[2*i+1]})
	}
	work := t.TempDir()
	for _, n := range nodes {
		n.conf, n.log = filepath.Join(work, n.name+".conf"), filepath.Join(work, n.name+".log")
		writeNodeConfig(t, x, nodes, n)
		n.cmd = exec.Command(bin, "-c", n.conf, "-l", n.log)
		if err := n.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = n.cmd.Process.Kill()
			_ = n.cmd.Wait()
			if t.Failed() {
				data, _ := os.ReadFile(n.log)
				t.Logf("%s log:\n%s", n.name, tail(string(data), 20))
			}
		})
	}
	for _, n := range nodes {
		Eventually(t, brgWait, func() bool {
			c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", n.client), time.Second)
			if err == nil {
				c.Close()
			}
			return err == nil
		}, "%s to listen", n.name)
	}
	return nodes
}

// writeNodeConfig runs `intercom-bridge nats-config` for node n.
func writeNodeConfig(t *testing.T, x *mesh, nodes []*natsNode, n *natsNode) {
	t.Helper()
	args := []string{"nats-config", "--cert", filepath.Join(x.dir, "nats.crt"), "--key", filepath.Join(x.dir, "nats.key"),
		"--ca", filepath.Join(x.dir, "ca.crt"), "--dir", x.dir, "--server-name", n.name,
		"--listen", fmt.Sprintf("127.0.0.1:%d", n.client), "--cluster", fmt.Sprintf("127.0.0.1:%d", n.route), "-o", n.conf}
	for _, o := range nodes {
		if o != n {
			args = append(args, "--route", fmt.Sprintf("127.0.0.1:%d", o.route))
		}
	}
	if r := brgRun(t, x.hosts[0].H, args...); r.Code != 0 {
		t.Fatalf("nats-config %s: %+v", n.name, r)
	}
}

// TestBridgeClusterAnyToAny: five hosts join a three-node nats-server
// cluster (host i on node i mod 3; the cluster tells them of the others).
// Any-to-any messages, asks and topics work as through the hub; beta's
// certificate can neither receive gamma's traffic nor publish as gamma (the
// configuration's verify_and_map users); a node killed (SIGKILL) while three
// hosts stream loses nothing and duplicates nothing (its hosts reconnect to
// the others); and a host whose certificate is revoked is cut off by
// writing the configuration again and reloading the nodes, the others
// unaffected.
func TestBridgeClusterAnyToAny(t *testing.T) {
	t.Parallel()
	x := newMesh(t)
	nodes := natsCluster(t, x)
	for i, h := range x.hosts {
		x.join(h, nodes[i%3].url(), "nats")
	}
	x.awaitFull()
	meshAnyToAny(t, x)
	meshNoImpersonation(t, x, nodes[1].url(), "nats", false)

	// A node dies mid-stream: alpha and delta were on it.
	alpha, beta, gamma, delta, eps := x.host("alpha"), x.host("beta"), x.host("gamma"), x.host("delta"), x.host("epsilon")
	var wg sync.WaitGroup
	var toDelta, toEps map[string][]string
	wg.Add(2)
	go func() {
		defer wg.Done()
		toDelta = meshStream(t, x, []*meshHost{beta, gamma, eps}, delta, 30, "stream")
	}()
	go func() { defer wg.Done(); toEps = meshStream(t, x, []*meshHost{alpha, beta, gamma}, eps, 30, "stream") }()
	first := eps.s.Event(brgWait)
	_ = nodes[0].cmd.Process.Kill()
	t.Logf("node n1 killed after epsilon printed %v", first["text"])
	wg.Wait()
	f := strings.Fields(msgStr(first["text"]))
	if len(f) != 3 || toEps[f[1]][0] != first["id"] {
		t.Fatalf("epsilon's first message %v is not a stream's first", first)
	}
	toEps[f[1]] = toEps[f[1]][1:]
	meshReceive(t, eps.s, toEps, brgWait)
	meshReceive(t, delta.s, toDelta, brgWait)
	x.awaitFull()
	brgMarker(t, alpha.H, alpha.session(), delta.target(), delta.s)
	brgMarker(t, delta.H, delta.session(), eps.target(), eps.s)

	// Revocation on a team's NATS: revoke epsilon, write the configuration
	// again (epsilon's user is gone) and reload the nodes still running.
	if r := brgRun(t, alpha.H, "certs", "revoke", "--dir", x.dir, "--name", "epsilon"); r.Code != 0 {
		t.Fatalf("revoke epsilon: %+v", r)
	}
	for _, n := range nodes[1:] {
		writeNodeConfig(t, x, nodes, n)
		if data, _ := os.ReadFile(n.conf); strings.Contains(string(data), `user: "epsilon"`) {
			t.Fatalf("%s still lets epsilon in:\n%s", n.name, data)
		}
		_ = n.cmd.Process.Signal(syscall.SIGHUP)
	}
	for _, h := range []*meshHost{alpha, beta, gamma, delta} {
		brgAwaitRow(t, h.H, eps.target(), func(r map[string]any) bool { return r["connected"] == false }, eps.target()+" disconnected on "+h.name)
	}
	brgAwaitLog(t, eps.bridge, 0, "link refused", "authorization violation")
	brgMarker(t, beta.H, beta.session(), gamma.target(), gamma.s)
	brgMarker(t, gamma.H, gamma.session(), alpha.target(), alpha.s)
}
