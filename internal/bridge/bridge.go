// Package bridge links the local broker to the brokers of other machines
// through NATS: either an embedded hub (Serve: a NATS server listening on
// the network, the broker itself never does) that any number of hosts join,
// or the team's own NATS server or cluster (Join with a nats:// or tls://
// URL). Every host, the hub's included, is a NATS client with mutual TLS
// 1.3, mapped to the user of its certificate's name with permissions for
// its own subjects only (Permissions). Each host serves requests for itself
// on icb.req.<host>.<from>.* by calling its local broker as an ordinary
// client, broadcasts its sessions on icb.pres.<host>, and forwards its
// broker's outbox to each host. Everything that arrives is remote input:
// the host comes from the subject (which NATS permissions vouch for), rates
// are limited here, and the broker validates and bounds the rest.
package bridge

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/internal/certs"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Options configure one bridge.
type Options struct {
	Name  string      // this host's name (its certificate's name)
	Peers certs.Peers // the hosts it links with
	Link  *certs.Link // certificate, CA and live revocation list
	// Serve: the address to listen on.
	Listen string
	// Join: "host:port" of an intercom-bridge serve (TLS first), or nats://
	// or tls:// URLs of a NATS server or cluster, comma-separated; and the
	// name in that server's certificate.
	Addr       string
	ServerName string
	Exports    []Export          // topics other hosts may use
	Limits     wire.BridgeLimits // quotas of each remote host here
	Local      intercom.Options
	Log        *slog.Logger
	Events     func(Event)     // ready, connecting, refused, down (for the command's output)
	Reload     <-chan struct{} // re-read the revocation list now (SIGHUP)
}

// Export makes topics starting with Prefix usable by Host ("": every host).
type Export struct {
	Host   string
	Prefix string
}

// exportsFor lists the prefixes exported to host.
func (o *Options) exportsFor(host string) []string {
	var out []string
	for _, e := range o.Exports {
		if e.Host == "" || e.Host == host {
			out = append(out, e.Prefix)
		}
	}
	return out
}

// allowed reports whether the bridge exchanges with host.
func (o *Options) allowed(host string) bool {
	return host != o.Name && wire.ValidHost(host) && o.Peers.Allows(host)
}

// Event is something the command reports on stdout.
type Event struct {
	Kind  string // ready, connecting, refused, down
	Addr  string
	Error string
}

// Timings.
const (
	presenceEvery = time.Second
	fullEvery     = 5 * time.Second // a full presence at least this often (a heartbeat otherwise)
	hostSilent    = 3500 * time.Millisecond
	linkTimeout   = 3 * time.Second
	drainEvery    = 2 * time.Second

	// The link's own connection: a handshake (TCP, TLS with client
	// certificates, NATS CONNECT: about four round trips) must fit in
	// linkConnect and its TLS part in linkHandshake even on a link with a
	// 1.4 s round trip that loses 30% of packets (the partition test's bad
	// link); a connection is stale after linkPingsOut pings unanswered
	// linkPing apart, longer than TCP stalls on such a link. A host that
	// goes silent is noticed by presence (hostSilent), not by these.
	linkConnect   = 15 * time.Second
	linkHandshake = 10 * time.Second
	linkPing      = 3 * time.Second
	linkPingsOut  = 4
	crlEvery      = 2 * time.Second
)

// linkState is the bridge's own link: up or not, its last error.
type linkState struct {
	opts  *Options
	mode  string
	addr  string
	since time.Time

	mu        sync.Mutex
	connected bool
	serving   bool // subscribed, on the link and to the local broker
	ready     bool // the ready event was sent
	lastErr   string
	errAt     time.Time
	lastEvent string
	eventAt   time.Time

	// changed is kicked when the link goes up or down, so the broker hears
	// of it at once rather than at the next presenceEvery tick (a link
	// lost a moment ago must not still be reported up).
	changed chan struct{}
}

func newLinkState(mode, addr string, opts Options) *linkState {
	return &linkState{opts: &opts, mode: mode, addr: addr, since: time.Now().UTC(), changed: make(chan struct{}, 1)}
}

func (l *linkState) emit(kind string, err error) {
	if l.opts.Events == nil {
		return
	}
	ev := Event{Kind: kind, Addr: l.addr}
	if err != nil {
		ev.Error = err.Error()
	}
	l.opts.Events(ev)
}

// setServing records that the bridge serves (ready once the link is up).
func (l *linkState) setServing() {
	l.mu.Lock()
	l.serving = true
	first := l.connected && !l.ready
	l.ready = l.ready || first
	l.mu.Unlock()
	if first {
		l.emit("ready", nil)
	}
}

// setConnected records the link going up or down.
func (l *linkState) setConnected(up bool, err error) {
	l.mu.Lock()
	was, first := l.connected, !l.ready && up && l.serving
	l.connected = up
	l.ready = l.ready || first
	if err != nil {
		l.lastErr, l.errAt = err.Error(), time.Now().UTC()
	}
	l.mu.Unlock()
	if up != was {
		kick(l.changed)
	}
	switch {
	case first:
		l.emit("ready", nil)
	case up && !was:
		l.opts.Log.Info("link up", "addr", l.addr)
	case !up && was:
		l.opts.Log.Warn("link down", "addr", l.addr, "err", err)
		l.emit("down", err)
	}
}

// refused records a failed connection attempt; the event is repeated only
// when the reason changes, or every 30 s.
func (l *linkState) refused(err error) {
	l.mu.Lock()
	l.lastErr, l.errAt = err.Error(), time.Now().UTC()
	again := err.Error() != l.lastEvent || time.Since(l.eventAt) > 30*time.Second
	if again {
		l.lastEvent, l.eventAt = err.Error(), time.Now()
	}
	l.mu.Unlock()
	l.opts.Log.Warn("link refused", "addr", l.addr, "err", err)
	if again {
		l.emit("refused", err)
	}
}

// report is the bridge's state for the local broker (intercom-bridge status).
func (l *linkState) report() wire.BridgeState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return wire.BridgeState{Name: l.opts.Name, Mode: l.mode, Addr: l.addr, Peers: l.opts.Peers.String(),
		Connected: l.connected, LastError: l.lastErr, ErrorAt: l.errAt, Since: l.since,
		CRL: crlSummary(l.opts.Link.Revocation.Status())}
}

func crlSummary(st certs.RevocationStatus) string {
	switch {
	case !st.Loaded:
		return "none loaded (" + st.Path + " missing): revoked certificates are not refused"
	case st.Stale:
		return fmt.Sprintf("%s is past its NextUpdate (%s): every peer is refused", st.Path, st.NextUpdate.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("%s: %d revoked, next update %s", st.Path, st.Revoked, st.NextUpdate.UTC().Format(time.RFC3339))
}

// run serves one bridge over link until ctx ends, its presence on route.
// recheck closes links that the revocation list refuses now.
func run(ctx context.Context, opts Options, link *nats.Conn, st *linkState, route presenceRoute, recheck func()) error {
	c, err := intercom.Connect(ctx, opts.Local)
	if err != nil {
		return fmt.Errorf("connect local broker: %w", err)
	}
	defer c.Close()
	s := newSide(ctx, opts, link, c, st)
	s.route = route
	if err := s.subscribe(); err != nil {
		return err
	}
	again := make(chan struct{}, 1)
	c.OnReconnect(func() { // a new broker (the last one died) knows no host's sessions
		s.reportAllAgain()
		kick(again)
	})
	st.setServing()
	s.knowPeers(ctx)
	go s.watchCRL(ctx, recheck)
	t := time.NewTicker(presenceEvery)
	defer t.Stop()
	for {
		s.tick(ctx)
		select {
		case <-ctx.Done():
			s.goodbye()
			return nil
		case <-c.Done():
			return fmt.Errorf("local broker: %w", c.Err())
		case <-t.C:
		case <-again:
		case <-st.changed:
		}
	}
}

// watchCRL reloads the revocation list when its file changes (polled) or
// on Reload, and rechecks the live links each time.
func (s *side) watchCRL(ctx context.Context, recheck func()) {
	rev := s.opts.Link.Revocation
	t := time.NewTicker(crlEvery)
	defer t.Stop()
	lastErr := ""
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.opts.Reload:
			s.log.Info("reloading the revocation list (SIGHUP)")
		}
		changed, err := rev.Reload()
		switch {
		case err != nil && err.Error() != lastErr && (rev.Status().Loaded || s.opts.Link.CRLRequired):
			s.log.Error("revocation list refused (unreadable, not the CA's, or older than the one in force); the last one read stays in force", "err", err)
		case changed:
			st := rev.Status()
			s.log.Info("revocation list loaded", "path", st.Path, "revoked", st.Revoked, "number", st.Number, "next_update", st.NextUpdate)
		}
		lastErr = ""
		if err != nil {
			lastErr = err.Error()
		}
		recheck()
	}
}
