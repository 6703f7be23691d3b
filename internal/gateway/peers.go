package gateway

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"strings"
	"sync"
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

// learn reads the server's first line on ic (INFO, naming the client id),
// passes it on to c and records pid under that id. It returns the reader
// the rest of the server's bytes come from, and the id (0 when the line
// did not name one: nothing recorded).
func (t *peerTable) learn(ic net.Conn, c net.Conn, pid int) (io.Reader, uint64) {
	br := bufio.NewReaderSize(ic, 4096)
	line, err := br.ReadSlice('\n')
	if len(line) > 0 {
		if _, werr := c.Write(line); werr != nil {
			return br, 0
		}
	}
	if err != nil || pid <= 0 {
		return br, 0
	}
	cid := infoClientID(string(line))
	if cid == 0 {
		return br, 0
	}
	t.mu.Lock()
	if t.pids == nil {
		t.pids = map[uint64]int{}
	}
	t.pids[cid] = pid
	t.mu.Unlock()
	return br, cid
}

// infoClientID is the client_id of a NATS INFO line, 0 when it has none.
func infoClientID(line string) uint64 {
	rest, ok := strings.CutPrefix(line, "INFO ")
	if !ok || len(rest) > maxInfoLine {
		return 0
	}
	var info struct {
		ClientID uint64 `json:"client_id"`
	}
	if json.Unmarshal([]byte(strings.TrimSpace(rest)), &info) != nil {
		return 0
	}
	return info.ClientID
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
