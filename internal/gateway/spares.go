package gateway

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"
)

// Spare connections: every hook is a new process and a new connection, and
// it waits for the server's INFO before it can say anything. Dialling an
// in-process connection (the server's client set up, INFO encoded and
// written through a pipe, the client id read from it) is done ahead: the
// gateway keeps spareCount connections dialled with their INFO read, and an
// accepted client is handed one, its INFO written at once.
//
// A spare waits at most spareLife for a client; then it is closed and not
// replaced until the next client comes, so an idle broker holds none and
// does nothing. The server closes a connection that has not sent CONNECT
// within its auth timeout, and pings one that has been silent for its ping
// interval (2 minutes by default, which an unread spare could not answer):
// ServerAuthTimeout is the auth timeout a server behind a gateway needs,
// and spareLife stays under the ping interval.
const (
	spareCount = 2
	spareLife  = time.Minute
	// connectGrace is what a client has to send CONNECT once handed its
	// connection: the NATS server's default auth timeout.
	connectGrace = 2 * time.Second
	// ServerAuthTimeout is the auth timeout (server.Options.AuthTimeout)
	// the server behind a gateway should have: a spare handed out at the
	// end of its life still gives its client connectGrace.
	ServerAuthTimeout = spareLife + connectGrace
)

// serverConn is an in-process connection to the server whose first bytes
// (the INFO line) have been read but not yet passed on.
type serverConn struct {
	ic     net.Conn
	first  []byte
	cid    uint64      // the client id the INFO named; 0 if none
	expiry *time.Timer // a spare's end
}

// infoWait bounds the wait for the server's INFO on a new connection (a
// fail-safe: the server writes it as it sets the connection up).
const infoWait = 10 * time.Second

// openServerConn dials the server and reads its first bytes (one read:
// the server writes INFO at once, in one write).
func openServerConn(dial Dialer) (*serverConn, error) {
	ic, err := dial()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, 4096)
	err = ic.SetReadDeadline(time.Now().Add(infoWait))
	n := 0
	if err == nil {
		n, err = ic.Read(buf)
	}
	if err == nil {
		err = ic.SetReadDeadline(time.Time{})
	}
	if err != nil {
		ic.Close()
		return nil, fmt.Errorf("read the server's INFO: %w", err)
	}
	return &serverConn{ic: ic, first: buf[:n], cid: firstClientID(buf[:n])}, nil
}

// alive reports whether the server has not closed the connection: a read
// with a deadline already past answers at once, consuming nothing (so for
// net.Pipe, what InProcessConn returns; for another kind of connection it
// may say alive when it is not).
func (sc *serverConn) alive() bool {
	if sc.ic.SetReadDeadline(time.Unix(1, 0)) != nil {
		return false
	}
	_, err := sc.ic.Read(nil)
	if sc.ic.SetReadDeadline(time.Time{}) != nil {
		return false
	}
	return err == nil || errors.Is(err, os.ErrDeadlineExceeded)
}

// sparePool holds the spare connections, oldest first.
type sparePool struct {
	dial    Dialer
	log     *slog.Logger
	wg      *sync.WaitGroup // the gateway's: Close waits for the dialling
	life    time.Duration   // spareLife; shorter in tests
	mu      sync.Mutex
	idle    []*serverConn
	dialing int
	closed  bool
}

// take returns the oldest spare the server has not closed, nil when there
// is none; the ones it closed are dropped.
func (p *sparePool) take() *serverConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.idle) > 0 {
		sc := p.idle[0]
		p.idle = p.idle[1:]
		sc.expiry.Stop()
		if sc.alive() {
			return sc
		}
		sc.ic.Close()
	}
	return nil
}

// fill dials, in the background, as many spares as the pool lacks
// (counting those being dialled).
func (p *sparePool) fill() {
	p.mu.Lock()
	n := spareCount - len(p.idle) - p.dialing
	if p.closed || n <= 0 {
		p.mu.Unlock()
		return
	}
	p.dialing += n
	p.wg.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.wg.Done()
		for range n {
			p.add(openServerConn(p.dial))
		}
	}()
}

// add puts a newly dialled spare in the pool, to be closed at the end of
// its life; a pool closed meanwhile closes it.
func (p *sparePool) add(sc *serverConn, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dialing--
	if err != nil {
		p.log.Debug("dial a spare in-process connection", "err", err)
		return
	}
	if p.closed {
		sc.ic.Close()
		return
	}
	sc.expiry = time.AfterFunc(p.life, func() { p.expire(sc) })
	p.idle = append(p.idle, sc)
}

// expire closes sc if it is still waiting in the pool.
func (p *sparePool) expire(sc *serverConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, s := range p.idle {
		if s == sc {
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
			sc.ic.Close()
			return
		}
	}
}

// close closes the spares and dials no more; it is idempotent.
func (p *sparePool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, sc := range p.idle {
		sc.expiry.Stop()
		sc.ic.Close()
	}
	p.idle = nil
}

// count is how many spares wait (tests).
func (p *sparePool) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}
