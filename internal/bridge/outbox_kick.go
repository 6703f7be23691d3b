package bridge

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// Forwarding without reading the outbox again. The broker announces each
// message it committed to a host's outbox, with the message, and numbers
// its announcements (wire.HeaderOutboxKick). Once a read of an outbox saw
// its end and forwarded all of it (caughtUp), every later message of that
// outbox is announced, in order, so the bridge forwards the announced ones
// as they come: one request to the local broker less on a message's way.
// Anything that breaks the chain (an announcement missed, out of order, or
// from a new broker run; too many waiting; a forward that failed; the drain's
// timer) sends the bridge back to reading the outbox, oldest first, as
// before. A message forwarded twice (announced during a read that also
// returned it) is recognised by the remote broker by its id.

const (
	maxKicked      = 1024    // announced messages waiting for the drain
	maxKickedBytes = 4 << 20 // and their encoded bytes
)

// onOutboxKick takes an announcement of the local broker.
func (s *side) onOutboxKick(m *nats.Msg) {
	host := strings.TrimPrefix(m.Subject, wire.BridgeOut(""))
	var msg wire.Message
	readable := len(m.Data) <= wire.MaxLinkPayload && json.Unmarshal(m.Data, &msg) == nil && msg.ID != ""
	run, n, numbered := parseKick(m.Header.Get(wire.HeaderOutboxKick))
	s.mu.Lock()
	inOrder := numbered && run == s.kickRun && n == s.kickN+1
	if numbered {
		s.kickRun, s.kickN = run, n
	}
	if !inOrder { // an announcement missed, or a broker that does not number them
		for _, q := range s.peers {
			q.forgetKickedLocked()
		}
	}
	p := s.peerLocked(host)
	if p != nil {
		if readable && len(p.kicked) < maxKicked && p.kickedBytes+len(m.Data) <= maxKickedBytes {
			p.kicked = append(p.kicked, msg)
			p.kickedBytes += len(m.Data)
		} else {
			p.forgetKickedLocked()
		}
	}
	s.mu.Unlock()
	if p != nil {
		kick(p.kick)
	}
}

// parseKick reads "<run>.<n>".
func parseKick(h string) (run string, n uint64, ok bool) {
	i := strings.LastIndexByte(h, '.')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.ParseUint(h[i+1:], 10, 64)
	return h[:i], n, err == nil && n > 0
}

// forgetKickedLocked sends p back to reading its outbox. s.mu held.
func (p *peer) forgetKickedLocked() {
	p.caughtUp, p.kicked, p.kickedBytes = false, nil, 0
	p.kickGen++
}

// forgetKicked is forgetKickedLocked taking s.mu.
func (s *side) forgetKicked(p *peer) {
	s.mu.Lock()
	p.forgetKickedLocked()
	s.mu.Unlock()
}

// takeKicked returns the announced messages to forward, when p is caught
// up (ok); otherwise the outbox must be read.
func (s *side) takeKicked(p *peer) (msgs []wire.Message, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !p.caughtUp {
		return nil, false
	}
	msgs, p.kicked, p.kickedBytes = p.kicked, nil, 0
	return msgs, true
}

// beginRead starts a read of p's outbox: what was announced before it is
// in what the read returns (a message announced while it was being
// persisted is committed before the broker reads: its bridgeOutbox), so
// it is dropped. It returns the generation the read's end compares.
func (s *side) beginRead(p *peer) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	p.kicked, p.kickedBytes = nil, 0
	return p.kickGen
}

// readToEnd records that a read begun at gen saw the outbox's end and
// forwarded all of it: p is caught up unless the chain broke meanwhile.
// Announced messages the read returned are dropped from those waiting.
func (s *side) readToEnd(p *peer, gen uint64, read []wire.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.kickGen != gen {
		return
	}
	p.caughtUp = true
	if len(p.kicked) == 0 || len(read) == 0 {
		return
	}
	seen := make(map[string]bool, len(read))
	for _, m := range read {
		seen[m.ID] = true
	}
	kept := p.kicked[:0]
	for _, m := range p.kicked {
		if !seen[m.ID] {
			kept = append(kept, m)
		}
	}
	p.kicked = kept
}
