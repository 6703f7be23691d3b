package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"golang.org/x/time/rate"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Bounds of what a bridge holds for the other hosts at once.
const (
	workQueue        = 32       // requests of one host waiting for the local broker
	maxQueuedBytes   = 32 << 20 // their bytes, all hosts together
	linkSubMsgs      = 256      // the requests subscription's pending messages
	linkSubBytes     = 32 << 20 //   and bytes
	presSubMsgs      = 64       // the presence subscription's
	presSubBytes     = 16 << 20
	presencePerSec   = 4 // presence messages accepted from one host per second
	presencePerBurst = 8
	// and their bytes: a full presence (at most a link payload) every few
	// seconds and a heartbeat a second pass; a flood of big ones does not
	presenceBytesPerSec = wire.MaxLinkPayload / 2
	presenceBytesBurst  = 3 * wire.MaxLinkPayload
)

// side is one running bridge.
type side struct {
	opts  Options
	link  *nats.Conn
	local *intercom.Client
	log   *slog.Logger
	st    *linkState
	ctx   context.Context
	route presenceRoute

	warns *rate.Limiter // warnings a peer can cause, bounded

	mu       sync.Mutex
	peers    map[string]*peer
	queued   int64 // bytes waiting in the peers' work queues
	own      ownPresence
	lastFull time.Time
	pushFull bool   // a new host appeared: send our full presence at once
	kickRun  string // the broker run of the last numbered outbox announcement
	kickN    uint64 // and its number (outbox_kick.go)

	outboxReads atomic.Int64 // reads of the local outboxes (tests count them)
}

// peer is what this bridge knows of one other host.
type peer struct {
	host      string
	work      chan *nats.Msg // its requests, handled in order
	kick      chan struct{}  // its outbox has news
	msgs      *rate.Limiter  // its messages and topic operations
	data      *rate.Limiter  // their bytes
	pres      *rate.Limiter  // its presence messages
	presBytes *rate.Limiter  // their bytes

	// guarded by side.mu
	seen        time.Time      // last presence
	version     string         // of the last sessions received
	sessions    []wire.Session // the last sessions received
	fresh       bool           // sessions not yet reported to the broker
	everFull    bool           // a full presence was received
	reported    bool           // the broker was told it is up
	lastErr     string
	dropNotes   int            // presence or requests dropped for its rate
	noBatch     bool           // its bridge predates batched deliveries
	batchShrink int            // its batches are halved this many times (a slow link)
	kicked      []wire.Message // announced outbox messages not yet forwarded (outbox_kick.go)
	kickedBytes int            // their encoded size
	caughtUp    bool           // the outbox holds nothing older than kicked that is not forwarded
	kickGen     uint64         // counts what made caughtUp false: an announcement missed or out of order
}

func newSide(ctx context.Context, opts Options, link *nats.Conn, local *intercom.Client, st *linkState) *side {
	return &side{ctx: ctx, opts: opts, link: link, local: local, log: opts.Log, st: st, route: directPresence, peers: map[string]*peer{}, pushFull: true,
		warns: rate.NewLimiter(5, 20)}
}

// peerLocked returns the state of host, making it (and its worker and
// drain) on first use; nil when host is not one of ours or too many hosts
// are known.
func (s *side) peerLocked(host string) *peer {
	if p := s.peers[host]; p != nil {
		return p
	}
	if !s.opts.allowed(host) || len(s.peers) >= s.opts.Limits.Hosts {
		return nil
	}
	l := s.opts.Limits
	burst := int(l.MsgsPerSec * 10)
	p := &peer{host: host, work: make(chan *nats.Msg, workQueue), kick: make(chan struct{}, 1),
		msgs: rate.NewLimiter(rate.Limit(l.MsgsPerSec), max(burst, 1)),
		data: rate.NewLimiter(rate.Limit(l.BytesPerSec), int(max(4*l.BytesPerSec, 2*wire.MaxLinkPayload))),
		pres: rate.NewLimiter(presencePerSec, presencePerBurst), presBytes: rate.NewLimiter(presenceBytesPerSec, presenceBytesBurst)}
	s.peers[host] = p
	go s.worker(p)
	go s.drainLoop(s.ctx, p)
	return p
}

func (s *side) peer(host string) *peer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peerLocked(host)
}

// subscribe sets up the link's subscriptions and the local broker's.
func (s *side) subscribe() error {
	req, err := s.link.Subscribe(reqPrefix+token(s.opts.Name)+".*.*", s.onRequest)
	if err != nil {
		return fmt.Errorf("link subscribe: %w", err)
	}
	_ = req.SetPendingLimits(linkSubMsgs, linkSubBytes)
	pres, err := s.link.Subscribe(s.route.In+"*", s.onPresence)
	if err != nil {
		return fmt.Errorf("link subscribe: %w", err)
	}
	_ = pres.SetPendingLimits(presSubMsgs, presSubBytes)
	lc := s.local.Conn()
	if _, err := lc.Subscribe(wire.BridgeOut("*"), s.onOutboxKick); err != nil {
		return fmt.Errorf("local subscribe: %w", err)
	}
	if _, err := lc.Subscribe(wire.BridgeRPC("*"), s.onTopicRPC); err != nil {
		return fmt.Errorf("local subscribe: %w", err)
	}
	if err := lc.Flush(); err != nil {
		return err
	}
	if s.link.IsConnected() {
		return s.link.Flush()
	}
	return nil
}

func kick(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// onRequest takes a request from another host: the host is the one the
// subject names (NATS lets a host publish only as itself), the reply must
// go to that host's own inbox, and the request waits in the host's bounded
// queue for the local broker.
func (s *side) onRequest(m *nats.Msg) {
	to, from, _, ok := parseReq(m.Subject)
	if !ok || to != s.opts.Name {
		return
	}
	if !strings.HasPrefix(m.Reply, inboxPrefix(from)+".") {
		s.warn("request dropped: its reply subject is not the sender's inbox", "from", from, "reply", cut(m.Reply, 80))
		return
	}
	if len(m.Data) > wire.MaxLinkPayload { // a hub of ours refuses it first; a hostile hub might not
		respondErr(m, wire.Errorf(wire.CodeTooLarge, "request too large (%d bytes, max %d)", len(m.Data), wire.MaxLinkPayload))
		return
	}
	s.mu.Lock()
	p := s.peerLocked(from)
	if p == nil {
		s.mu.Unlock()
		s.log.Debug("request from a host this bridge does not link with", "from", from)
		return
	}
	size := int64(len(m.Data))
	full := s.queued+size > maxQueuedBytes
	if !full {
		select {
		case p.work <- m:
			s.queued += size
		default:
			full = true
		}
	}
	s.mu.Unlock()
	if full {
		respondErr(m, wire.Errorf(wire.CodeQuota, "quota_exceeded: %s has too many requests waiting here; retry later", from))
	}
}

// worker handles one host's requests in arrival order.
func (s *side) worker(p *peer) {
	for {
		select {
		case <-s.ctx.Done():
			return
		case m := <-p.work:
			s.mu.Lock()
			s.queued -= int64(len(m.Data))
			s.mu.Unlock()
			s.handle(p, m)
		}
	}
}

func (s *side) handle(p *peer, m *nats.Msg) {
	_, from, op, _ := parseReq(m.Subject)
	now := time.Now()
	if !p.msgs.AllowN(now, 1) {
		respondErr(m, wire.Errorf(wire.CodeQuota, "quota_exceeded: %s sends more than %g messages per second here", from, s.opts.Limits.MsgsPerSec))
		return
	}
	if !p.data.AllowN(now, len(m.Data)) {
		respondErr(m, wire.Errorf(wire.CodeQuota, "quota_exceeded: %s sends more than %d bytes per second here", from, s.opts.Limits.BytesPerSec))
		return
	}
	limits := s.opts.Limits
	switch op {
	case opDeliver:
		var req wire.BridgeDeliver
		if err := json.Unmarshal(m.Data, &req); err != nil {
			respondErr(m, wire.Errorf(wire.CodeBadRequest, "decode delivery: %v", err))
			return
		}
		req.Host, req.Limits = from, &limits // the link vouches for the host; never trust a claimed one
		s.relay(m, wire.SubjBridgeDeliver, req)
	case opDeliverBatch:
		var req wire.BridgeDeliverBatch
		if err := json.Unmarshal(m.Data, &req); err != nil || len(req.Messages) == 0 || len(req.Messages) > wire.MaxBridgeBatch {
			respondErr(m, wire.Errorf(wire.CodeBadRequest, "bad delivery batch"))
			return
		}
		// The request took one message's share of the rate: the batch is cut
		// to what the rest allows (the sender sends the others later).
		k := len(req.Messages)
		for k > 1 && !p.msgs.AllowN(now, k-1) {
			k /= 2
		}
		req.Messages = req.Messages[:k]
		req.Host, req.Limits = from, &limits
		s.relayBatch(m, req)
	case opTopic:
		var req wire.BridgeTopic
		if err := json.Unmarshal(m.Data, &req); err != nil {
			respondErr(m, wire.Errorf(wire.CodeBadRequest, "decode topic operation: %v", err))
			return
		}
		req.Host, req.Limits, req.Exports = from, &limits, s.opts.exportsFor(from)
		s.relay(m, wire.SubjBridgeTopic, req)
	default:
		respondErr(m, wire.Errorf(wire.CodeBadRequest, "unknown operation %q", op))
	}
}

// warn logs what another host caused, at most a few lines per second.
func (s *side) warn(msg string, args ...any) {
	if s.warns.Allow() {
		s.log.Warn(msg, args...)
	}
}

func respondErr(m *nats.Msg, e *wire.Error) {
	data, _ := wire.LinkJSON(wire.Reply[wire.Empty]{Error: e})
	_ = m.Respond(data)
}

// relay passes a request to the local broker and its raw reply back.
func (s *side) relay(m *nats.Msg, subject string, req any) {
	data, _ := json.Marshal(req)
	ctx, cancel := context.WithTimeout(s.ctx, linkTimeout)
	defer cancel()
	res, err := s.local.Conn().RequestWithContext(ctx, subject, data)
	if err != nil {
		respondErr(m, wire.Errorf(wire.CodeInternal, "remote broker: %v", err))
		return
	}
	_ = m.Respond(res.Data)
}

// onTopicRPC forwards a topic operation from the local broker to a host.
func (s *side) onTopicRPC(m *nats.Msg) {
	host := strings.TrimPrefix(m.Subject, wire.BridgeRPC(""))
	fail := func(code, format string, a ...any) {
		out, _ := json.Marshal(wire.Reply[wire.Empty]{Error: wire.Errorf(code, format, a...)})
		_ = m.Respond(out)
	}
	if !s.opts.allowed(host) {
		fail(wire.CodeNotFound, "this bridge does not link with %q", host)
		return
	}
	if len(m.Data) > wire.MaxLinkPayload-1024 {
		fail(wire.CodeTooLarge, "topic operation too large for the bridge link (%d bytes)", len(m.Data))
		return
	}
	res, err := s.link.Request(reqSubject(host, s.opts.Name, opTopic), m.Data, linkTimeout)
	if err != nil {
		fail(wire.CodePeerOffline, "link to %s: %v", host, err)
		return
	}
	_ = m.Respond(res.Data)
}

// tick runs every presenceEvery: our presence out, the hosts' presence and
// our link's state to the broker.
func (s *side) tick(ctx context.Context) {
	s.publishPresence(ctx)
	s.reportHosts(ctx)
	st := s.st.report()
	cctx, cancel := context.WithTimeout(ctx, linkTimeout)
	defer cancel()
	st.Pid = os.Getpid()
	if _, err := intercom.Call[wire.Empty](cctx, s.local, wire.SubjBridgeState, st); err != nil && ctx.Err() == nil {
		s.log.Debug("report bridge state", "err", err)
	}
}

// goodbye tells the broker every host is unreachable now.
func (s *side) goodbye() {
	// Only to a broker that is there: a stopping bridge must not start one
	// (its home may be on its way out).
	if !s.local.Conn().IsConnected() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s.mu.Lock()
	hosts := make([]string, 0, len(s.peers))
	for h := range s.peers {
		hosts = append(hosts, h)
	}
	s.mu.Unlock()
	for _, h := range hosts {
		_, _ = intercom.Call[wire.Empty](ctx, s.local, wire.SubjBridgePresence, wire.BridgePresence{Host: h, LinkUp: false, Keep: true, Limits: &s.opts.Limits})
	}
}

// knowPeers makes the state of every named peer and of every host with an
// outbox, so that they are reported (down until heard) and their outboxes
// forwarded once they are up.
func (s *side) knowPeers(ctx context.Context) {
	for _, h := range s.opts.Peers.Names {
		s.peer(h)
	}
	cctx, cancel := context.WithTimeout(ctx, linkTimeout)
	defer cancel()
	st, err := intercom.Call[wire.BridgeStatusReply](cctx, s.local, wire.SubjBridgeStatus, struct{}{})
	if err != nil {
		s.log.Warn("read the outboxes", "err", err)
		return
	}
	for _, h := range st.Hosts {
		if h.Outbox > 0 {
			s.peer(h.Host)
		}
	}
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
