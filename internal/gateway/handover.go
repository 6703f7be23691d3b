package gateway

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// A client's connection is the server's own once handed over: the server's
// read and write loops use the accepted socket itself. (Before, the gateway
// spliced each one to an in-process connection, net.Pipe: two copying
// goroutines and a synchronous hand-off for every read and write.)
//
// handedConn is that socket as the server holds it. Its first write is the
// server's INFO, which names the client id: the gateway records the pid
// behind it and tells the watcher then, before the server reads anything
// from the client (the server writes INFO before it starts its read loop).
// Its Close, by the server or by the gateway, ends it once; the watcher is
// told of the close on a goroutine of its own, since the server closes a
// connection with the client's lock held and a watcher may ask the server
// about its clients.
//
// Its methods delegate to the socket one by one rather than embedding it:
// an embedded *net.UnixConn would let the server's vectored writes
// (net.Buffers) go around Write, and the INFO with them.
type handedConn struct {
	c      *net.UnixConn
	g      *Gateway
	pid    int
	opened atomic.Bool
	cid    uint64 // set by the first write, read after it
	once   sync.Once
}

// handOver gives c (process pid) to the server, once tracked so that Close
// closes it.
func (g *Gateway) handOver(c *net.UnixConn, pid int) {
	h := &handedConn{c: c, g: g, pid: pid}
	g.mu.Lock()
	open := g.conns != nil
	if open {
		g.conns[h] = struct{}{}
	}
	g.mu.Unlock()
	if !open {
		c.Close()
		g.wg.Done()
		return
	}
	g.hand(h)
}

func (h *handedConn) Read(p []byte) (int, error) { return h.c.Read(p) }

func (h *handedConn) Write(p []byte) (int, error) {
	if !h.opened.Load() {
		h.cid = firstClientID(p)
		h.g.peers.record(h.cid, h.pid)
		if h.g.watch != nil && h.cid != 0 {
			h.g.watch.Opened(h.cid)
		}
		h.opened.Store(true)
	}
	return h.c.Write(p)
}

func (h *handedConn) Close() error {
	err := h.c.Close()
	h.once.Do(func() {
		g := h.g
		g.mu.Lock()
		delete(g.conns, h) // a no-op once Close took them all
		g.mu.Unlock()
		go func() {
			defer g.wg.Done()
			if !h.opened.Load() || h.cid == 0 {
				return
			}
			g.peers.forget(h.cid)
			if g.watch != nil {
				g.watch.Closed(h.cid)
			}
		}()
	})
	return err
}

func (h *handedConn) LocalAddr() net.Addr                { return h.c.LocalAddr() }
func (h *handedConn) RemoteAddr() net.Addr               { return h.c.RemoteAddr() }
func (h *handedConn) SetDeadline(t time.Time) error      { return h.c.SetDeadline(t) }
func (h *handedConn) SetReadDeadline(t time.Time) error  { return h.c.SetReadDeadline(t) }
func (h *handedConn) SetWriteDeadline(t time.Time) error { return h.c.SetWriteDeadline(t) }
