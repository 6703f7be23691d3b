// Package bridge links the local broker to a broker on another machine. The
// link is a NATS connection over mutual TLS 1.3: the serving side runs an
// embedded NATS server listening on the network (the broker itself never
// does), the joining side connects to it, and each side serves requests
// for its own host on icb.<host>.* by calling its local broker as an
// ordinary client. Messages to remote targets wait in the local broker's
// durable outbox until the remote broker has stored them.
package bridge

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Options configure one side of a link.
type Options struct {
	Name   string // this host's name (its certificate name)
	Peer   string // the other host's name
	TLS    *tls.Config
	Listen string // serve: address to listen on
	Addr   string // join: address to connect to
	Local  intercom.Options
	Log    *slog.Logger
	// Ready, if set, is called once the bridge serves (serve: listening).
	Ready func(addr string)
}

// Timings.
const (
	presenceEvery = time.Second
	linkTimeout   = 3 * time.Second
	drainEvery    = 2 * time.Second
)

func subj(host, what string) string { return "icb." + host + "." + what }

// Serve listens on opts.Listen and runs the link for whoever joins.
func Serve(ctx context.Context, opts Options) error {
	host, portStr, err := net.SplitHostPort(opts.Listen)
	if err != nil {
		return fmt.Errorf("--listen %q: %w", opts.Listen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return fmt.Errorf("--listen %q: bad port", opts.Listen)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	sopts := &server.Options{
		ServerName: "intercom-bridge-" + opts.Name, Host: host, Port: port,
		// TLS first: the port says nothing in plaintext (no NATS INFO) before
		// the handshake, and a peer without a certificate learns nothing.
		TLS: true, TLSVerify: true, TLSConfig: opts.TLS, TLSTimeout: 2, TLSHandshakeFirst: true,
		NoSigs: true, NoSystemAccount: true, MaxPayload: 8 << 20,
	}
	srv, err := server.NewServer(sopts)
	if err != nil {
		return fmt.Errorf("bridge server: %w", err)
	}
	srv.SetLoggerV2(tlsLogger{opts.Log.With("component", "link")}, false, false, false)
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		return fmt.Errorf("bridge server: cannot listen on %s", opts.Listen)
	}
	defer srv.Shutdown()
	link, err := nats.Connect("", nats.InProcessServer(srv), nats.Name("bridge-"+opts.Name))
	if err != nil {
		return fmt.Errorf("bridge server: %w", err)
	}
	defer link.Close()
	addr := srv.Addr().String()
	opts.Log.Info("bridge serving", "listen", addr, "name", opts.Name, "peer", opts.Peer)
	return run(ctx, opts, link, addr)
}

// Join connects to a serving bridge at opts.Addr, reconnecting forever.
func Join(ctx context.Context, opts Options) error {
	link, err := nats.Connect("tls://"+opts.Addr,
		nats.Secure(opts.TLS), nats.TLSHandshakeFirst(), nats.Name("bridge-"+opts.Name),
		nats.MaxReconnects(-1), nats.ReconnectWait(500*time.Millisecond), nats.RetryOnFailedConnect(true),
		nats.PingInterval(2*time.Second), nats.MaxPingsOutstanding(2),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				opts.Log.Warn("link down", "peer", opts.Peer, "err", err)
			}
		}),
		nats.ReconnectErrHandler(func(_ *nats.Conn, err error) {
			opts.Log.Warn("link refused", "peer", opts.Peer, "addr", opts.Addr, "err", err)
		}),
		nats.ReconnectHandler(func(*nats.Conn) { opts.Log.Info("link up", "peer", opts.Peer) }),
		nats.ConnectHandler(func(*nats.Conn) { opts.Log.Info("link up", "peer", opts.Peer) }),
	)
	if err != nil {
		return fmt.Errorf("join %s: %w", opts.Addr, err)
	}
	defer link.Close()
	return run(ctx, opts, link, opts.Addr)
}

// tlsLogger routes the link server's logs (TLS refusals among them) to slog.
type tlsLogger struct{ l *slog.Logger }

func (t tlsLogger) f(format string, v []any) string {
	return strings.TrimSpace(fmt.Sprintf(format, v...))
}
func (t tlsLogger) Noticef(format string, v ...any) { t.l.Debug(t.f(format, v)) }
func (t tlsLogger) Warnf(format string, v ...any)   { t.l.Warn(t.f(format, v)) }
func (t tlsLogger) Fatalf(format string, v ...any)  { t.l.Error(t.f(format, v)) }
func (t tlsLogger) Errorf(format string, v ...any)  { t.l.Warn("link refused: " + t.f(format, v)) }
func (t tlsLogger) Debugf(format string, v ...any)  {}
func (t tlsLogger) Tracef(format string, v ...any)  {}

// side is one running bridge.
type side struct {
	opts  Options
	link  *nats.Conn
	local *intercom.Client
	log   *slog.Logger
	drain chan struct{}
	mu    sync.Mutex
	up    bool
}

func run(ctx context.Context, opts Options, link *nats.Conn, addr string) error {
	c, err := intercom.Connect(ctx, opts.Local)
	if err != nil {
		return fmt.Errorf("connect local broker: %w", err)
	}
	defer c.Close()
	s := &side{opts: opts, link: link, local: c, log: opts.Log, drain: make(chan struct{}, 1)}
	// Requests from the peer, for this host.
	for what, fn := range map[string]nats.MsgHandler{
		"deliver": s.onDeliver, "presence": s.onPresence, "topic": s.onTopic,
	} {
		sub, err := link.Subscribe(subj(opts.Name, what), fn)
		if err != nil {
			return fmt.Errorf("link subscribe: %w", err)
		}
		_ = sub.SetPendingLimits(-1, -1)
	}
	// Work from the local broker, for the peer.
	if _, err := c.Conn().Subscribe(wire.BridgeOut(opts.Peer), func(*nats.Msg) { s.kick() }); err != nil {
		return fmt.Errorf("local subscribe: %w", err)
	}
	if _, err := c.Conn().Subscribe(wire.SubjectPrefix+"bridge.rpc."+opts.Peer, s.onTopicRPC); err != nil {
		return fmt.Errorf("local subscribe: %w", err)
	}
	if err := c.Conn().Flush(); err != nil {
		return err
	}
	if opts.Ready != nil {
		opts.Ready(addr)
	}
	go s.drainLoop(ctx)
	t := time.NewTicker(presenceEvery)
	defer t.Stop()
	for {
		s.syncPresence(ctx)
		select {
		case <-ctx.Done():
			// Only to a broker that is there: a stopping bridge must not
			// start one (its home may be on its way out).
			if c.Conn().IsConnected() {
				pctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				_, _ = intercom.Call[wire.Empty](pctx, c, wire.SubjBridgePresence, wire.BridgePresence{Host: opts.Peer, LinkUp: false})
				cancel()
			}
			return nil
		case <-c.Done():
			return fmt.Errorf("local broker: %w", c.Err())
		case <-t.C:
		}
	}
}

func (s *side) kick() {
	select {
	case s.drain <- struct{}{}:
	default:
	}
}

// relay passes a raw request to the local broker and its raw reply back.
func (s *side) relay(m *nats.Msg, subject string, req any) {
	data, _ := json.Marshal(req)
	ctx, cancel := context.WithTimeout(context.Background(), linkTimeout)
	defer cancel()
	res, err := s.local.Conn().RequestWithContext(ctx, subject, data)
	if err != nil {
		out, _ := json.Marshal(wire.Reply[wire.Empty]{Error: wire.Errorf(wire.CodeInternal, "remote broker: %v", err)})
		_ = m.Respond(out)
		return
	}
	_ = m.Respond(res.Data)
}

func (s *side) onDeliver(m *nats.Msg) {
	var req wire.BridgeDeliver
	if err := json.Unmarshal(m.Data, &req); err != nil {
		return
	}
	req.Host = s.opts.Peer // the link authenticates the peer; never trust a claimed host
	s.relay(m, wire.SubjBridgeDeliver, req)
}

func (s *side) onTopic(m *nats.Msg) {
	var req wire.BridgeTopic
	if err := json.Unmarshal(m.Data, &req); err != nil {
		return
	}
	req.Host = s.opts.Peer
	s.relay(m, wire.SubjBridgeTopic, req)
}

func (s *side) onPresence(m *nats.Msg) {
	ctx, cancel := context.WithTimeout(context.Background(), linkTimeout)
	defer cancel()
	rows, err := s.local.List(ctx, intercom.ListOptions{Scope: "all", IncludeDisconnected: true})
	if err != nil {
		return
	}
	local := []wire.Session{}
	for _, r := range rows {
		if r.Host == "" && !r.Ephemeral {
			local = append(local, r)
		}
	}
	data, _ := json.Marshal(local)
	_ = m.Respond(data)
}

// onTopicRPC forwards a topic operation from the local broker to the peer.
func (s *side) onTopicRPC(m *nats.Msg) {
	var req wire.BridgeTopic
	if err := json.Unmarshal(m.Data, &req); err != nil {
		return
	}
	res, err := s.link.Request(subj(s.opts.Peer, "topic"), m.Data, linkTimeout)
	if err != nil {
		out, _ := json.Marshal(wire.Reply[wire.Empty]{Error: wire.Errorf(wire.CodePeerOffline, "link to %s is down: %v", s.opts.Peer, err)})
		_ = m.Respond(out)
		return
	}
	_ = m.Respond(res.Data)
}

// syncPresence fetches the peer's sessions and reports them (or the link
// being down) to the local broker.
func (s *side) syncPresence(ctx context.Context) {
	var sessions []wire.Session
	up := false
	if res, err := s.link.Request(subj(s.opts.Peer, "presence"), nil, linkTimeout); err == nil {
		if json.Unmarshal(res.Data, &sessions) == nil {
			up = true
		}
	}
	pctx, cancel := context.WithTimeout(ctx, linkTimeout)
	defer cancel()
	if _, err := intercom.Call[wire.Empty](pctx, s.local, wire.SubjBridgePresence, wire.BridgePresence{Host: s.opts.Peer, LinkUp: up, Sessions: sessions}); err != nil {
		s.log.Warn("report presence", "err", err)
	}
	s.mu.Lock()
	was := s.up
	s.up = up
	s.mu.Unlock()
	if up && !was {
		s.log.Info("link established", "peer", s.opts.Peer)
		s.kick()
	} else if !up && was {
		s.log.Warn("link lost", "peer", s.opts.Peer)
	}
}

// drainLoop forwards the outbox, oldest first, whenever kicked and every
// drainEvery.
func (s *side) drainLoop(ctx context.Context) {
	t := time.NewTicker(drainEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.drain:
		case <-t.C:
		}
		for s.drainOnce(ctx) {
		}
	}
}

// drainOnce forwards one batch; it reports whether more may be waiting.
func (s *side) drainOnce(ctx context.Context) bool {
	cctx, cancel := context.WithTimeout(ctx, linkTimeout)
	box, err := intercom.Call[wire.InboxReply](cctx, s.local, wire.SubjBridgeOutbox, wire.BridgeOutboxRequest{Host: s.opts.Peer, Limit: 100})
	cancel()
	if err != nil || len(box.Messages) == 0 {
		return false
	}
	for _, msg := range box.Messages {
		fwd := msg
		fwd.To = strings.TrimSuffix(msg.To, "@"+s.opts.Peer)
		data, _ := json.Marshal(wire.BridgeDeliver{Host: s.opts.Name, Message: fwd})
		res, err := s.link.Request(subj(s.opts.Peer, "deliver"), data, linkTimeout)
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				s.log.Debug("forward deferred", "id", msg.ID, "err", err)
			}
			return false // link down: the outbox keeps it
		}
		var out wire.Reply[wire.SendReply]
		if err := json.Unmarshal(res.Data, &out); err != nil {
			return false
		}
		ack := wire.BridgeAck{Host: s.opts.Peer, ID: msg.ID, Result: out.Result}
		if out.Error != nil {
			if out.Error.Code == wire.CodeInternal || out.Error.Code == wire.CodeNoSpace {
				return false // remote trouble: retry later
			}
			ack.Error, ack.Result = out.Error, nil
			s.log.Warn("remote refused message", "id", msg.ID, "to", msg.To, "err", out.Error.Message)
		}
		actx, cancel := context.WithTimeout(ctx, linkTimeout)
		_, err = intercom.Call[wire.Empty](actx, s.local, wire.SubjBridgeAck, ack)
		cancel()
		if err != nil {
			return false
		}
	}
	return len(box.Messages) == 100
}
