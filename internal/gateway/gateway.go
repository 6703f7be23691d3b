// Package gateway exposes the embedded NATS server on a private Unix socket.
// Each accepted connection has its peer uid checked (SO_PEERCRED on Linux,
// LOCAL_PEERCRED on macOS) against the broker's own and is then handed to
// the server, which reads and writes the socket itself from then on: no
// copy and no goroutine stand between a client and the server
// (handover.go); the server itself never listens on any network port. The
// gateway tells a Watcher when each connection opens and closes, and
// remembers the pid behind each (peers.go).
package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// Handover makes c a client connection of the NATS server (or closes it).
// The server writes its INFO to c before it reads anything from it.
type Handover func(c net.Conn)

// Watcher is told of the connections by the client id the server gave
// each: Opened before the server reads anything the client sent, Closed
// once the server has closed the connection. The two calls for one
// connection come in that order; calls for different connections may come
// concurrently.
type Watcher interface {
	Opened(cid uint64)
	Closed(cid uint64)
}

// Gateway accepts Unix connections and hands them to NATS. It re-creates
// its socket when the file or its directory disappears (see heal.go).
type Gateway struct {
	path  string
	hand  Handover
	watch Watcher // nil: nobody is told
	log   *slog.Logger
	uid   int
	wg    sync.WaitGroup
	mu    sync.Mutex
	ln    *net.UnixListener        // the current listener; nil once stopped
	ident fileIdentity             // of the socket file ln created
	swap  chan struct{}            // closed and renewed when ln is replaced or stopped
	conns map[*handedConn]struct{} // open; nil once closed
	peers peerTable                // NATS client id -> peer pid (peers.go)
	once  sync.Once
	stop  sync.Once
	quit  chan struct{} // closed by StopAccepting
	// noWatch makes the gateway poll its socket instead of watching its
	// directory (tests of the fallback); set before Serve.
	noWatch bool
}

// Listen creates the socket at path with mode 0600. A stale socket file (one
// that refuses connections) is removed first; a live one is an error. Each
// client accepted is given to hand; w, if not nil, is told of each.
func Listen(path string, hand Handover, w Watcher, log *slog.Logger) (*Gateway, error) {
	ln, ident, err := listen(path, log)
	if err != nil {
		return nil, err
	}
	g := &Gateway{ln: ln, ident: ident, path: path, hand: hand, watch: w, log: log, uid: os.Getuid(),
		conns: map[*handedConn]struct{}{}, swap: make(chan struct{}), quit: make(chan struct{})}
	return g, nil
}

// listen removes a stale socket at path and listens there, mode 0600.
func listen(path string, log *slog.Logger) (*net.UnixListener, fileIdentity, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fileIdentity{}, fmt.Errorf("listen %s: path exists and is not a socket", path)
		}
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return nil, fileIdentity{}, fmt.Errorf("listen %s: another broker is serving this socket", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fileIdentity{}, fmt.Errorf("remove stale socket %s: %w", path, err)
		}
		log.Info("removed stale socket", "path", path)
	}
	old := syscall.Umask(0o177)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		return nil, fileIdentity{}, fmt.Errorf("listen %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(true)
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fileIdentity{}, fmt.Errorf("chmod %s: %w", path, err)
	}
	ident, err := identityOf(path)
	if err != nil {
		ln.Close()
		return nil, fileIdentity{}, fmt.Errorf("inspect %s: %w", path, err)
	}
	return ln, ident, nil
}

// Serve accepts connections until ctx is done or Close is called, on
// whichever listener is current (the socket may be re-created meanwhile).
func (g *Gateway) Serve(ctx context.Context) error {
	go func() {
		select {
		case <-ctx.Done():
			g.Close()
		case <-g.quit:
		}
	}()
	go g.watchSocket()
	for {
		g.mu.Lock()
		ln, swapped := g.ln, g.swap
		g.mu.Unlock()
		if ln == nil {
			return nil
		}
		g.accept(ln)
		<-swapped // ln was closed: replaced, or stopped
	}
}

// accept serves one listener until it is closed. Accept errors (too many
// open files, say) back off instead of spinning.
func (g *Gateway) accept(ln *net.UnixListener) {
	var delay time.Duration
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			g.log.Warn("accept", "err", err, "retry_in", delay)
			time.Sleep(delay)
			continue
		}
		delay = 0
		uid, pid, err := PeerCred(c)
		if err != nil || uid != g.uid {
			g.log.Warn("refused connection from another user", "peer_uid", uid, "peer_pid", pid, "err", err)
			c.Close()
			continue
		}
		g.wg.Add(1)
		go g.handOver(c, pid)
	}
}

// PeerCred returns the uid and pid of the process at the other end of c.
func PeerCred(c *net.UnixConn) (int, int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, 0, err
	}
	uid, pid := -1, 0
	var cerr error
	err = raw.Control(func(fd uintptr) { uid, pid, cerr = peerCred(int(fd)) })
	if err == nil {
		err = cerr
	}
	if err != nil {
		return -1, 0, fmt.Errorf("read peer credentials: %w", err)
	}
	return uid, pid, nil
}

// StopAccepting closes the listener (removing the socket) and stops
// re-creating it; the connections handed over go on until Close. It is
// idempotent.
func (g *Gateway) StopAccepting() {
	g.stop.Do(func() {
		close(g.quit)
		g.mu.Lock()
		ln := g.ln
		g.ln = nil
		close(g.swap)
		g.mu.Unlock()
		if ln != nil {
			if !g.ownsPath() {
				ln.SetUnlinkOnClose(false) // the path is no longer our socket
			}
			ln.Close()
		}
	})
}

// Close stops accepting, closes every connection handed over, waits until
// the watcher has been told of each and removes the socket. It is
// idempotent.
func (g *Gateway) Close() {
	g.StopAccepting()
	g.once.Do(func() {
		g.mu.Lock()
		conns := g.conns
		g.conns = nil
		g.mu.Unlock()
		for h := range conns {
			h.Close()
		}
		g.wg.Wait()
	})
}
