package gateway

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// bounded is how long a test waits for an event before failing (a
// fail-safe, never an assertion about speed).
const bounded = 20 * time.Second

// fakeServer stands in for the NATS server: each connection says INFO
// naming its client id and then echoes. It reports each connection dialled
// and each one ended, and can close one from its side.
type fakeServer struct {
	mu     sync.Mutex
	next   uint64
	open   map[uint64]net.Conn // the server's ends
	dialed chan uint64
	ended  chan uint64
}

func newFakeServer() *fakeServer {
	return &fakeServer{open: map[uint64]net.Conn{}, dialed: make(chan uint64, 100), ended: make(chan uint64, 100)}
}

func (f *fakeServer) dial() (net.Conn, error) {
	a, b := net.Pipe()
	f.mu.Lock()
	f.next++
	cid := f.next
	f.open[cid] = b
	f.mu.Unlock()
	go func() {
		if _, err := fmt.Fprintf(b, "INFO {\"client_id\":%d}\r\n", cid); err == nil {
			_, _ = io.Copy(b, b)
		}
		b.Close()
		f.mu.Lock()
		delete(f.open, cid)
		f.mu.Unlock()
		f.ended <- cid
	}()
	f.dialed <- cid
	return a, nil
}

// kill closes connection cid from the server's side.
func (f *fakeServer) kill(cid uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.open[cid].Close()
}

// events records what a Watcher is told.
type events struct{ opened, closed chan uint64 }

func newEvents() *events {
	return &events{opened: make(chan uint64, 100), closed: make(chan uint64, 100)}
}

func (e *events) Opened(cid uint64) { e.opened <- cid }
func (e *events) Closed(cid uint64) { e.closed <- cid }

// await returns the next id on ch, failing after bounded.
func await(t *testing.T, what string, ch <-chan uint64) uint64 {
	t.Helper()
	select {
	case id := <-ch:
		return id
	case <-time.After(bounded):
		t.Fatalf("never: %s", what)
		return 0
	}
}

// serve starts a gateway on a new socket with dial and w; life, if not
// zero, is its spares' life. It is closed when the test ends.
func serve(t *testing.T, dial Dialer, w Watcher, life time.Duration) (*Gateway, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "gw") // short: sun_path is 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "s")
	g, err := Listen(path, dial, w, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if life != 0 {
		g.spares.life = life
	}
	served := make(chan struct{})
	go func() { defer close(served); _ = g.Serve(context.Background()) }()
	t.Cleanup(func() { g.Close(); <-served })
	return g, path
}

// client connects to path and returns the connection and the client id
// its INFO line named.
func client(t *testing.T, path string) (net.Conn, *bufio.Reader, uint64) {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(bounded))
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("INFO: %q, %v", line, err)
	}
	cid := firstClientID([]byte(line))
	if cid == 0 {
		t.Fatalf("INFO names no client id: %q", line)
	}
	return c, r, cid
}

// echoes fails unless what is written on c comes back.
func echoes(t *testing.T, c net.Conn, r *bufio.Reader) {
	t.Helper()
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := r.ReadString('\n'); err != nil || line != "ping\n" {
		t.Fatalf("echo: %q, %v", line, err)
	}
}

// A client is handed the oldest spare: its INFO at once, the watcher told
// of it before, the pid behind it known; a new spare replaces it, and the
// watcher is told when it closes.
func TestSpareServesClient(t *testing.T) {
	t.Parallel()
	f, ev := newFakeServer(), newEvents()
	g, path := serve(t, f.dial, ev, 0)
	first, second := await(t, "first spare", f.dialed), await(t, "second spare", f.dialed)
	c, r, cid := client(t, path)
	if cid != first {
		t.Fatalf("client got connection %d, want the oldest spare %d (then %d)", cid, first, second)
	}
	select {
	case got := <-ev.opened:
		if got != cid {
			t.Fatalf("watcher told of %d, want %d", got, cid)
		}
	default:
		t.Fatal("the client had its INFO before the watcher was told")
	}
	if pid, ok := g.PeerPid(cid); !ok || pid != os.Getpid() {
		t.Fatalf("PeerPid(%d) = %d, %v; want %d", cid, pid, ok, os.Getpid())
	}
	echoes(t, c, r)
	await(t, "a spare replacing the one taken", f.dialed)
	c.Close()
	if got := await(t, "closed", ev.closed); got != cid {
		t.Fatalf("watcher told %d closed, want %d", got, cid)
	}
	eventuallyTrue(t, "the pid forgotten", func() bool { _, ok := g.PeerPid(cid); return !ok })
}

// A spare the server closed is not handed out: the client gets a working
// connection all the same, and the pool is filled again.
func TestSpareClosedByServerIsReplaced(t *testing.T) {
	t.Parallel()
	f := newFakeServer()
	g, path := serve(t, f.dial, nil, 0)
	dead := map[uint64]bool{}
	for range spareCount {
		id := await(t, "spare", f.dialed)
		dead[id] = true
		f.kill(id)
	}
	for range spareCount {
		await(t, "spare closed by the server", f.ended)
	}
	c, r, cid := client(t, path)
	if dead[cid] {
		t.Fatalf("client was handed spare %d, which the server had closed", cid)
	}
	echoes(t, c, r)
	for range spareCount { // beside the client's own: the pool filled again
		await(t, "a new spare", f.dialed)
	}
	eventuallyTrue(t, "the pool full again", func() bool { return g.spares.count() == spareCount })
}

// Close leaves no connection to the server open, spares or spliced, and
// dials none afterwards.
func TestSparesEndWithTheGateway(t *testing.T) {
	t.Parallel()
	f := newFakeServer()
	g, path := serve(t, f.dial, nil, 0)
	for range spareCount {
		await(t, "spare", f.dialed)
	}
	c, r, _ := client(t, path)
	echoes(t, c, r)
	await(t, "the spare replacing the one taken", f.dialed)
	g.Close()
	for range spareCount + 1 {
		await(t, "a connection ended by Close", f.ended)
	}
	g.spares.fill()
	f.mu.Lock()
	open, dialed := len(f.open), len(f.dialed)
	f.mu.Unlock()
	if open != 0 || dialed != 0 || g.spares.count() != 0 {
		t.Fatalf("after Close: %d server connections open, %d dialled, %d spares", open, dialed, g.spares.count())
	}
}

// Spares nobody takes end with their life and are not replaced: an idle
// gateway dials nothing. The next client is served as ever.
func TestIdleSparesEndAndStayGone(t *testing.T) {
	t.Parallel()
	f := newFakeServer()
	const life = 20 * time.Millisecond
	_, path := serve(t, f.dial, nil, life)
	for range spareCount {
		await(t, "spare", f.dialed)
	}
	for range spareCount {
		await(t, "an unused spare ended", f.ended)
	}
	select { // an absence, watched for many lives: no churn
	case id := <-f.dialed:
		t.Fatalf("an idle gateway dialled connection %d", id)
	case <-time.After(20 * life):
	}
	c, r, _ := client(t, path)
	echoes(t, c, r)
}

// Through a real NATS server, with the auth timeout the gateway asks for:
// a client handed a spare connects and is answered; spares the server
// closed are dropped and replaced; the server's client count stays put
// while nothing happens.
func TestSparesWithNATSServer(t *testing.T) {
	t.Parallel()
	srv, err := server.NewServer(&server.Options{
		DontListen: true, NoSigs: true, NoLog: true, NoSystemAccount: true,
		Users:       []*server.User{{Username: "agent", Password: "x"}},
		NoAuthUser:  "agent",
		AuthTimeout: ServerAuthTimeout.Seconds(),
	})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	defer srv.Shutdown()
	if !srv.ReadyForConnections(bounded) {
		t.Fatal("nats server not ready")
	}
	g, path := serve(t, srv.InProcessConn, nil, 0)
	eventuallyTrue(t, "spares dialled", func() bool { return g.spares.count() == spareCount && srv.NumClients() == spareCount })
	talk := func(what string) uint64 {
		c, r, cid := client(t, path)
		if _, err := io.WriteString(c, "CONNECT {\"verbose\":false}\r\nPING\r\n"); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "PONG") {
			t.Fatalf("%s: the server answered %q, %v", what, line, err)
		}
		c.Close()
		return cid
	}
	talk("with a spare")
	eventuallyTrue(t, "the pool full again, the client gone", func() bool {
		return g.spares.count() == spareCount && srv.NumClients() == spareCount
	})
	// The server closes the pool's spares (each is registered with it a
	// little after it wrote its INFO: asked until it is).
	dead := map[uint64]bool{}
	eventuallyTrue(t, "spares closed by the server", func() bool {
		g.spares.mu.Lock()
		defer g.spares.mu.Unlock()
		open := false
		for _, sc := range g.spares.idle {
			dead[sc.cid] = true
			if sc.alive() {
				open = true
				_ = srv.DisconnectClientByID(sc.cid)
			}
		}
		return !open
	})
	if cid := talk("after the server closed the spares"); dead[cid] {
		t.Fatalf("client was handed connection %d, which the server had closed", cid)
	}
	eventuallyTrue(t, "the pool full again", func() bool { return g.spares.count() == spareCount && srv.NumClients() == spareCount })
	before := srv.NumClients()
	time.Sleep(100 * time.Millisecond) // an absence: nothing comes or goes while idle
	if n := srv.NumClients(); n != before {
		t.Fatalf("idle: the server's clients went from %d to %d", before, n)
	}
}

// eventuallyTrue polls cond until it holds, failing after bounded.
func eventuallyTrue(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bounded)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
