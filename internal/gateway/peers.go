package gateway

import (
	"net"
	"strings"
	"sync"

	"github.com/valyala/fastjson"
)

// peerTable remembers which process (the pid its socket's peer credentials
// named) is at the other end of each spliced NATS connection, by the client
// id the server gave that connection: the broker asks it who sent a
// request (broker/person.go).
type peerTable struct {
	mu   sync.Mutex
	pids map[uint64]int
}

// maxInfoLine bounds the server's INFO line read at connection start.
const maxInfoLine = 64 << 10

// learn reads the server's first bytes on ic (the INFO line naming the
// client id, written at once), records pid under that id and then passes
// the bytes on to c (so the id is known before the client can send
// anything). It returns the id, 0 when the bytes named none (nothing
// recorded). It never waits for more than one read.
func (t *peerTable) learn(ic net.Conn, c net.Conn, pid int) uint64 {
	buf := make([]byte, 4096)
	n, err := ic.Read(buf)
	first := buf[:n]
	var cid uint64
	if line, _, ok := strings.Cut(string(first), "\n"); ok && pid > 0 {
		cid = infoClientID(line)
	}
	if cid != 0 {
		t.mu.Lock()
		if t.pids == nil {
			t.pids = map[uint64]int{}
		}
		t.pids[cid] = pid
		t.mu.Unlock()
	}
	if n > 0 {
		if _, werr := c.Write(first); werr != nil {
			t.forget(cid)
			return 0
		}
	}
	if err != nil {
		t.forget(cid)
		return 0
	}
	return cid
}

// infoClientID is the client_id of a NATS INFO line, 0 when it has none.
func infoClientID(line string) uint64 {
	rest, ok := strings.CutPrefix(line, "INFO ")
	if !ok || len(rest) > maxInfoLine {
		return 0
	}
	// fastjson, not encoding/json: one INFO per connection, and a storm of
	// hooks is a storm of connections.
	v, err := fastjson.Parse(strings.TrimSpace(rest))
	if err != nil {
		return 0
	}
	return v.GetUint64("client_id")
}

func (t *peerTable) forget(cid uint64) {
	if cid == 0 {
		return
	}
	t.mu.Lock()
	delete(t.pids, cid)
	t.mu.Unlock()
}

// PeerPid returns the pid of the process connected through the socket as
// NATS client cid (ok false for a connection that is not the gateway's,
// e.g. the broker's own, or one that closed).
func (g *Gateway) PeerPid(cid uint64) (int, bool) {
	g.peers.mu.Lock()
	defer g.peers.mu.Unlock()
	pid, ok := g.peers.pids[cid]
	return pid, ok
}
