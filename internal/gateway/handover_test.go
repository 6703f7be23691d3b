package gateway

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/intercom-dev/intercom/internal/natsconn"
)

// bounded is how long a test waits for an event before failing (a
// fail-safe, never an assertion about speed).
const bounded = 20 * time.Second

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

// natsServer is a real NATS server listening nowhere, shut down when the
// test ends.
func natsServer(t *testing.T) *server.Server {
	t.Helper()
	srv, err := server.NewServer(&server.Options{
		DontListen: true, NoSigs: true, NoLog: true, NoSystemAccount: true,
		Users:      []*server.User{{Username: "agent", Password: "x"}},
		NoAuthUser: "agent",
	})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(bounded) {
		t.Fatal("nats server not ready")
	}
	return srv
}

// serve starts a gateway on a new socket handing its clients to srv and
// telling w. It is closed when the test ends.
func serve(t *testing.T, srv *server.Server, w Watcher) (*Gateway, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "gw") // short: sun_path is 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "s")
	g, err := Listen(path, func(c net.Conn) { natsconn.HandOver(srv, c) }, w, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
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

// talks fails unless the server answers a CONNECT and a PING on c.
func talks(t *testing.T, c net.Conn, r *bufio.Reader) {
	t.Helper()
	if _, err := io.WriteString(c, "CONNECT {\"verbose\":false}\r\nPING\r\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "PONG") {
		t.Fatalf("the server answered %q, %v", line, err)
	}
}

// A client is served by the server itself: the watcher is told of it by
// the client id its INFO names before the client reads that INFO, the pid
// behind it is known, and when the client hangs up the watcher is told and
// the pid forgotten.
func TestHandedClientIsServed(t *testing.T) {
	t.Parallel()
	srv, ev := natsServer(t), newEvents()
	g, path := serve(t, srv, ev)
	c, r, cid := client(t, path)
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
	talks(t, c, r)
	c.Close()
	if got := await(t, "closed", ev.closed); got != cid {
		t.Fatalf("watcher told %d closed, want %d", got, cid)
	}
	if _, ok := g.PeerPid(cid); ok {
		t.Fatalf("PeerPid(%d) still known after the watcher was told it closed", cid)
	}
}

// When the server closes a client, the client sees its connection end and
// the watcher is told.
func TestServerClosingAClientIsTold(t *testing.T) {
	t.Parallel()
	srv, ev := natsServer(t), newEvents()
	_, path := serve(t, srv, ev)
	c, r, cid := client(t, path)
	talks(t, c, r)
	if err := srv.DisconnectClientByID(cid); err != nil {
		t.Fatal(err)
	}
	if got := await(t, "closed", ev.closed); got != cid {
		t.Fatalf("watcher told %d closed, want %d", got, cid)
	}
	if _, err := io.ReadAll(r); err != nil {
		t.Fatalf("the client's connection did not end cleanly: %v", err)
	}
}

// Close closes every connection handed over and returns once the watcher
// was told of each; the server keeps no client; a client dialling after
// is refused.
func TestCloseEndsHandedConnections(t *testing.T) {
	t.Parallel()
	srv, ev := natsServer(t), newEvents()
	g, path := serve(t, srv, ev)
	want := map[uint64]bool{}
	for range 3 {
		c, r, cid := client(t, path)
		talks(t, c, r)
		want[cid] = true
	}
	g.Close()
	for range len(want) {
		select {
		case cid := <-ev.closed:
			if !want[cid] {
				t.Fatalf("watcher told %d closed, not one of %v", cid, want)
			}
			delete(want, cid)
		default:
			t.Fatalf("Close returned before the watcher was told of %v", want)
		}
	}
	deadline := time.Now().Add(bounded)
	for srv.NumClients() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the server still has %d clients after Close", srv.NumClients())
		}
		time.Sleep(2 * time.Millisecond)
	}
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		t.Fatal("a client could connect after Close")
	}
}
