// Package gateway exposes the embedded NATS server on a private Unix socket.
// Each accepted connection has its peer uid checked (SO_PEERCRED on Linux,
// LOCAL_PEERCRED on macOS) against the broker's own and is then spliced to an in-process NATS connection; the
// server itself never listens on any network port.
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
)

// Dialer opens a new in-process connection to the NATS server.
type Dialer func() (net.Conn, error)

// Gateway accepts Unix connections and splices them to NATS.
type Gateway struct {
	ln    *net.UnixListener
	path  string
	dial  Dialer
	log   *slog.Logger
	uid   int
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	once  sync.Once
}

// Listen creates the socket at path with mode 0600. A stale socket file (one
// that refuses connections) is removed first; a live one is an error.
func Listen(path string, dial Dialer, log *slog.Logger) (*Gateway, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("listen %s: path exists and is not a socket", path)
		}
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return nil, fmt.Errorf("listen %s: another broker is serving this socket", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale socket %s: %w", path, err)
		}
		log.Info("removed stale socket", "path", path)
	}
	old := syscall.Umask(0o177)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(true)
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("chmod %s: %w", path, err)
	}
	return &Gateway{ln: ln, path: path, dial: dial, log: log, uid: os.Getuid(), conns: map[net.Conn]struct{}{}}, nil
}

// Serve accepts connections until ctx is done or Close is called.
func (g *Gateway) Serve(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		g.Close()
	}()
	for {
		c, err := g.ln.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			g.log.Warn("accept", "err", err)
			continue
		}
		uid, pid, err := PeerCred(c)
		if err != nil || uid != g.uid {
			g.log.Warn("refused connection from another user", "peer_uid", uid, "peer_pid", pid, "err", err)
			c.Close()
			continue
		}
		g.wg.Add(1)
		go g.splice(c)
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

func (g *Gateway) splice(c *net.UnixConn) {
	defer g.wg.Done()
	defer c.Close()
	ic, err := g.dial()
	if err != nil {
		g.log.Warn("open in-process connection", "err", err)
		return
	}
	defer ic.Close()
	if !g.track(c, true) {
		return
	}
	defer g.track(c, false)
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(ic, c); ic.Close(); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, ic); c.Close(); done <- struct{}{} }()
	<-done
	<-done
}

// Close stops accepting, closes every spliced connection, waits for them and
// removes the socket. It is idempotent.
func (g *Gateway) Close() {
	g.once.Do(func() {
		g.ln.Close()
		g.mu.Lock()
		for c := range g.conns {
			c.Close()
		}
		g.conns = nil
		g.mu.Unlock()
		g.wg.Wait()
	})
}
