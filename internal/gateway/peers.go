package gateway

import (
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

// firstClientID is the client id named by the INFO line that starts first
// (the server's first bytes on a connection), 0 when they name none.
func firstClientID(first []byte) uint64 {
	line, _, ok := strings.Cut(string(first), "\n")
	if !ok {
		return 0
	}
	return infoClientID(line)
}

// record remembers that client cid is process pid (a pid of 0, unknown,
// and a cid of 0, none, are not recorded).
func (t *peerTable) record(cid uint64, pid int) {
	if cid == 0 || pid <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pids == nil {
		t.pids = map[uint64]int{}
	}
	t.pids[cid] = pid
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
