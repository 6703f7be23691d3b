package bridge

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"github.com/intercom-dev/intercom/internal/natslog"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/internal/certs"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Serve runs the hub: an embedded NATS server listening on opts.Listen for
// the hosts of opts.Peers, and this host's own bridge, connected to it
// in-process as a host like the others.
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
	auth := newHubAuth(opts)
	sopts := &server.Options{
		ServerName: "intercom-bridge-" + opts.Name, Host: host, Port: port,
		// TLS first: the port says nothing in plaintext (no NATS INFO) before
		// the handshake, and a peer without a certificate learns nothing.
		TLS: true, TLSVerify: true, TLSConfig: opts.Link.ServerConfig(auth.allow), TLSTimeout: linkHandshake.Seconds(), TLSHandshakeFirst: true,
		NoSigs: true, NoSystemAccount: true,
		MaxPayload: wire.MaxLinkPayload, MaxPending: pendingBytes, MaxSubs: subsPerConn,
		MaxControlLine: 4096, WriteDeadline: writeDeadline,
		PingInterval: linkPing, MaxPingsOut: linkPingsOut,
		CustomClientAuthentication: auth,
	}
	srv, err := server.NewServer(sopts)
	if err != nil {
		return fmt.Errorf("bridge server: %w", err)
	}
	auth.srv = srv
	// Our own joiners always make the TLS-first handshake; a refused
	// link is a warning of this host, not its error.
	srv.SetLoggerV2(natslog.Logger{L: opts.Log.With("component", "link"), Expected: []string{"TLS Handshake First"},
		ErrorLevel: slog.LevelWarn, ErrorPrefix: "link refused: "}, false, false, false)
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		return fmt.Errorf("bridge server: cannot listen on %s", opts.Listen)
	}
	defer srv.Shutdown()
	link, err := nats.Connect("", nats.InProcessServer(srv), nats.Token(auth.secret),
		nats.Name("intercom-bridge-"+opts.Name), nats.CustomInboxPrefix(inboxPrefix(opts.Name)),
		nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond), nats.ReconnectBufSize(-1))
	if err != nil {
		return fmt.Errorf("bridge server: %w", err)
	}
	defer link.Close()
	addr := srv.Addr().String()
	opts.Log.Info("bridge serving", "listen", addr, "name", opts.Name, "peers", opts.Peers.String())
	st := newLinkState("serve", addr, opts)
	st.setConnected(true, nil)
	return run(ctx, opts, link, st, hubPresence, auth.recheck)
}

// hubAuth maps each client certificate to the user of its host, with that
// host's Permissions (what verify_and_map does, plus a connection cap per
// host and the live revocation list). The hub's own bridge connects
// in-process with a secret token.
type hubAuth struct {
	self   string
	peers  certs.Peers
	rev    *certs.Revocation
	log    *slog.Logger
	secret string
	srv    *server.Server

	mu    sync.Mutex
	conns map[string]map[uint64]*x509.Certificate // host → live connections
}

func newHubAuth(opts Options) *hubAuth {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return &hubAuth{self: opts.Name, peers: opts.Peers, rev: opts.Link.Revocation, log: opts.Log,
		secret: hex.EncodeToString(b[:]), conns: map[string]map[uint64]*x509.Certificate{}}
}

// allow is the TLS-level check of a client's host.
func (a *hubAuth) allow(host string) error {
	if host == a.self {
		return fmt.Errorf("refused: a peer presented this hub's own certificate (%q)", host)
	}
	if a.peers.Any {
		return nil
	}
	return certs.ExpectOneOf(a.peers)(host)
}

// Check authorises one client connection.
func (a *hubAuth) Check(c server.ClientAuthentication) bool {
	if c.Kind() != server.CLIENT {
		return false
	}
	cs := c.GetTLSConnectionState()
	if cs == nil {
		ok := subtle.ConstantTimeCompare([]byte(c.GetOpts().Token), []byte(a.secret)) == 1
		if ok {
			c.RegisterUser(&server.User{Username: a.self, Permissions: hubPermissions(a.self, true)})
		}
		return ok
	}
	if len(cs.PeerCertificates) == 0 {
		return false
	}
	leaf := cs.PeerCertificates[0]
	host, err := certs.HostName(leaf)
	if err == nil {
		err = a.allow(host)
	}
	if err == nil {
		err = a.rev.Check(leaf)
	}
	if err != nil {
		a.log.Warn("link refused: "+err.Error(), "remote", addrOf(c))
		return false
	}
	a.mu.Lock()
	live := a.conns[host]
	if live == nil {
		live = map[uint64]*x509.Certificate{}
		a.conns[host] = live
	}
	for cid := range live {
		if !a.open(cid) {
			delete(live, cid)
		}
	}
	if _, again := live[c.GetID()]; !again && len(live) >= connsPerHost {
		a.mu.Unlock()
		a.log.Warn(fmt.Sprintf("link refused: %q already has %d connections (max %d)", host, len(live), connsPerHost), "remote", addrOf(c))
		return false
	}
	live[c.GetID()] = leaf
	a.mu.Unlock()
	c.RegisterUser(&server.User{Username: host, Permissions: hubPermissions(host, false)})
	return true
}

func addrOf(c server.ClientAuthentication) string {
	if a := c.RemoteAddress(); a != nil {
		return a.String()
	}
	return ""
}

// open reports whether client cid is still connected.
func (a *hubAuth) open(cid uint64) bool {
	cz, err := a.srv.Connz(&server.ConnzOptions{CID: cid})
	return err == nil && len(cz.Conns) == 1 && cz.Conns[0].Stop == nil
}

// recheck closes the live connections whose certificate the revocation
// list now refuses (revoked, or the list is past its NextUpdate).
func (a *hubAuth) recheck() {
	a.mu.Lock()
	var kick []uint64
	for host, live := range a.conns {
		for cid, leaf := range live {
			if err := a.rev.Check(leaf); err != nil {
				a.log.Warn("closing link: "+err.Error(), "host", host)
				kick = append(kick, cid)
				delete(live, cid)
			}
		}
	}
	a.mu.Unlock()
	for _, cid := range kick {
		_ = a.srv.DisconnectClientByID(cid)
	}
}
