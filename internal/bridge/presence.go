package bridge

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Presence: every presenceEvery each host broadcasts on icb.pres.<host>
// either its sessions (when they changed, at least every fullEvery, and at
// once when a new host appears) or a heartbeat naming the version it last
// sent. A host not heard for hostSilent counts as down.

// presenceMsg is one broadcast.
type presenceMsg struct {
	Version  string         `json:"v"`
	Full     bool           `json:"full,omitempty"`
	Sessions []wire.Session `json:"sessions,omitempty"`
}

type ownPresence struct {
	version string
}

// publishPresence broadcasts this host's sessions (or a heartbeat).
func (s *side) publishPresence(ctx context.Context) {
	if !s.link.IsConnected() {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, linkTimeout)
	rows, err := s.local.List(cctx, intercom.ListOptions{Scope: "all", IncludeDisconnected: true})
	cancel()
	if err != nil {
		s.log.Debug("list local sessions", "err", err)
		return
	}
	local := rows[:0]
	for _, r := range rows {
		if r.Host == "" && !r.Ephemeral {
			r.Project, r.Self = "", false
			local = append(local, r)
		}
	}
	// Connected first, then the most recently seen: what a cap keeps.
	slices.SortStableFunc(local, func(a, b wire.Session) int {
		if a.Connected != b.Connected {
			if a.Connected {
				return -1
			}
			return 1
		}
		return b.LastSeen.Compare(a.LastSeen)
	})
	local = local[:min(len(local), s.opts.Limits.PresenceRows)]
	local, version := fitSessions(local)
	s.mu.Lock()
	full := version != s.own.version || s.pushFull || time.Since(s.lastFull) >= fullEvery
	if full {
		s.lastFull, s.pushFull = time.Now(), false
	}
	s.own.version = version
	s.mu.Unlock()
	msg := presenceMsg{Version: version}
	if full {
		msg.Full, msg.Sessions = true, local
	}
	out, err := wire.LinkJSON(msg)
	if err != nil {
		return
	}
	if err := s.link.Publish(s.route.Out+token(s.opts.Name), out); err != nil {
		s.log.Debug("publish presence", "err", err)
	}
}

// fitSessions cuts rows until their encoding fits a link payload, and
// returns them with their version.
func fitSessions(rows []wire.Session) ([]wire.Session, string) {
	for {
		data, err := wire.LinkJSON(rows)
		if err != nil {
			return nil, ""
		}
		if len(data) <= wire.MaxLinkPayload-4096 || len(rows) == 0 {
			sum := sha256.Sum256(data)
			return rows, hex.EncodeToString(sum[:12])
		}
		rows = rows[:len(rows)/2]
	}
}

// onPresence takes another host's broadcast, within its rate and bytes;
// the hub's own bridge relays what passed to the other hosts.
func (s *side) onPresence(m *nats.Msg) {
	host := untoken(strings.TrimPrefix(m.Subject, s.route.In))
	if host == s.opts.Name || len(m.Data) > wire.MaxLinkPayload {
		return // a bridge never sends more (a hostile hub might)
	}
	s.mu.Lock()
	p := s.peerLocked(host)
	if p == nil || !p.pres.Allow() || !p.presBytes.AllowN(time.Now(), len(m.Data)) {
		if p != nil {
			p.dropNotes++
		}
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	if s.route.Relay {
		if err := s.link.Publish(relayPrefix+token(host), m.Data); err != nil {
			s.log.Debug("relay presence", "host", host, "err", err)
		}
	}
	var msg presenceMsg
	if err := json.Unmarshal(m.Data, &msg); err != nil {
		s.log.Debug("unreadable presence", "host", host, "err", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.seen.IsZero() {
		s.pushFull = true // let it learn our sessions without waiting
	}
	p.seen = time.Now()
	if msg.Full && (msg.Version != p.version || !p.everFull) {
		if msg.Sessions == nil {
			msg.Sessions = []wire.Session{}
		}
		msg.Sessions = msg.Sessions[:min(len(msg.Sessions), s.opts.Limits.PresenceRows)]
		p.sessions, p.version, p.fresh, p.everFull = msg.Sessions, msg.Version, true, true
	}
}

// reportAllAgain makes the next report carry every host's last sessions,
// changed or not: for a broker that started since (after a crash, a kill,
// an upgrade) and knows none of them.
func (s *side) reportAllAgain() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.peers {
		if p.everFull {
			p.fresh = true
		}
	}
}

// reportHosts tells the broker each host's sessions and whether it is up.
func (s *side) reportHosts(ctx context.Context) {
	now := time.Now()
	connected := s.link.IsConnected()
	s.mu.Lock()
	reqs := make([]wire.BridgePresence, 0, len(s.peers))
	for _, p := range s.peers {
		up := connected && !p.seen.IsZero() && now.Sub(p.seen) < hostSilent
		req := wire.BridgePresence{Host: p.host, LinkUp: up, Limits: &s.opts.Limits, Error: p.lastErr, Keep: true}
		if up && p.fresh {
			req.Sessions, req.Keep, p.fresh = p.sessions, false, false
		}
		if up != p.reported {
			if up {
				s.log.Info("link established", "host", p.host)
			} else {
				s.log.Warn("link lost", "host", p.host)
			}
			if up {
				kick(p.kick)
			}
		}
		p.reported = up
		reqs = append(reqs, req)
	}
	s.mu.Unlock()
	slices.SortFunc(reqs, func(a, b wire.BridgePresence) int { return cmp.Compare(a.Host, b.Host) })
	for _, req := range reqs {
		cctx, cancel := context.WithTimeout(ctx, linkTimeout)
		_, err := intercom.Call[wire.Empty](cctx, s.local, wire.SubjBridgePresence, req)
		cancel()
		if err != nil && !req.Keep {
			s.mu.Lock()
			if p := s.peers[req.Host]; p != nil {
				p.fresh = true // report them again next time
			}
			s.mu.Unlock()
		}
		if err != nil && ctx.Err() == nil {
			s.log.Warn("report presence", "host", req.Host, "err", err)
		}
	}
}
