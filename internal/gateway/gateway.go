// Package gateway exposes the embedded NATS server on a private Unix socket.
// Each accepted connection has its peer uid checked (SO_PEERCRED on Linux,
// LOCAL_PEERCRED on macOS) against the broker's own and is then spliced to
// an in-process NATS connection, one of the spares dialled ahead when there
// is one (spares.go); the server itself never listens on any network port.
// The gateway tells a Watcher when each spliced connection opens and
// closes, and remembers the pid behind each (peers.go).
package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// Dialer opens a new in-process connection to the NATS server.
type Dialer func() (net.Conn, error)

// Watcher is told of the spliced connections by the client id the server
// gave each: Opened before the client can send anything, Closed once the
// splice has ended (both directions). The two calls for one connection
// come in that order from one goroutine; calls for different connections
// may come concurrently.
type Watcher interface {
	Opened(cid uint64)
	Closed(cid uint64)
}

// Gateway accepts Unix connections and splices them to NATS. It re-creates
// its socket when the file or its directory disappears (see heal.go).
type Gateway struct {
	path   string
	dial   Dialer
	watch  Watcher // nil: nobody is told
	spares sparePool
	log    *slog.Logger
	uid    int
	wg     sync.WaitGroup
	mu     sync.Mutex
	ln     *net.UnixListener // the current listener; nil once stopped
	ident  fileIdentity      // of the socket file ln created
	swap   chan struct{}     // closed and renewed when ln is replaced or stopped
	conns  map[net.Conn]struct{}
	peers  peerTable // NATS client id -> peer pid (peers.go)
	once   sync.Once
	stop   sync.Once
	quit   chan struct{} // closed by StopAccepting
	// noWatch makes the gateway poll its socket instead of watching its
	// directory (tests of the fallback); set before Serve.
	noWatch bool
}

// Listen creates the socket at path with mode 0600. A stale socket file (one
// that refuses connections) is removed first; a live one is an error. w,
// if not nil, is told of each connection spliced.
func Listen(path string, dial Dialer, w Watcher, log *slog.Logger) (*Gateway, error) {
	ln, ident, err := listen(path, log)
	if err != nil {
		return nil, err
	}
	g := &Gateway{ln: ln, ident: ident, path: path, dial: dial, watch: w, log: log, uid: os.Getuid(),
		conns: map[net.Conn]struct{}{}, swap: make(chan struct{}), quit: make(chan struct{})}
	g.spares = sparePool{dial: dial, log: log, wg: &g.wg, life: spareLife}
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
	g.spares.fill()
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
		go g.splice(c, pid, g.spares.take())
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

func (g *Gateway) track(c net.Conn, add bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if add {
		if g.conns == nil {
			return false
		}
		g.conns[c] = struct{}{}
	} else {
		delete(g.conns, c)
	}
	return true
}

// splice joins client c (process pid) to the server through sc, or
// through a connection dialled now when sc is nil, until either side
// closes.
func (g *Gateway) splice(c *net.UnixConn, pid int, sc *serverConn) {
	defer g.wg.Done()
	defer c.Close()
	if sc == nil {
		var err error
		if sc, err = openServerConn(g.dial); err != nil {
			g.log.Warn("open in-process connection", "err", err)
			return
		}
	}
	ic := sc.ic
	defer ic.Close()
	if !g.track(c, true) {
		return
	}
	defer g.track(c, false)
	// The client id is known before the client can send anything.
	g.peers.record(sc.cid, pid)
	defer g.peers.forget(sc.cid)
	if g.watch != nil && sc.cid != 0 {
		g.watch.Opened(sc.cid)
		defer g.watch.Closed(sc.cid)
	}
	_, err := c.Write(sc.first)
	// The next client's spare is dialled once this one has its INFO: a
	// goroutine started before would run first.
	g.spares.fill()
	if err != nil {
		return
	}
	done := make(chan struct{})
	go func() { copyPooled(c, ic); c.Close(); close(done) }()
	copyPooled(ic, c)
	ic.Close()
	<-done
}

// spliceBuffers are the copy buffers of spliced connections: each hook is
// a new connection, and two fresh 32 KiB buffers (io.Copy's) per
// connection were a tenth of the broker's CPU in a storm of hooks.
var spliceBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// copyPooled is io.Copy from src to dst with a pooled buffer.
func copyPooled(dst io.Writer, src io.Reader) {
	buf := spliceBuffers.Get().(*[]byte)
	_, _ = io.CopyBuffer(dst, src, *buf)
	spliceBuffers.Put(buf)
}

// StopAccepting closes the listener (removing the socket) and the spares,
// and stops re-creating the socket; spliced connections go on until Close.
// It is idempotent.
func (g *Gateway) StopAccepting() {
	g.stop.Do(func() {
		close(g.quit)
		g.spares.close()
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

// Close stops accepting, closes every spliced connection, waits for them and
// removes the socket. It is idempotent.
func (g *Gateway) Close() {
	g.StopAccepting()
	g.once.Do(func() {
		g.mu.Lock()
		for c := range g.conns {
			c.Close()
		}
		g.conns = nil
		g.mu.Unlock()
		g.wg.Wait()
	})
}
