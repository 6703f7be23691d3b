package bridge

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

// Join connects to a hub (an intercom-bridge serve: "host:port", TLS first)
// or to the team's NATS server or cluster (nats:// or tls:// URLs,
// comma-separated), reconnecting forever.
func Join(ctx context.Context, opts Options) error {
	urls, tlsFirst, err := joinURLs(opts.Addr)
	if err != nil {
		return err
	}
	st := newLinkState("join", opts.Addr, opts)
	var server atomic.Pointer[x509.Certificate] // the certificate of the server joined last
	nopts := []nats.Option{
		nats.Secure(opts.Link.ClientConfig(opts.ServerName, server.Store)),
		nats.Name("intercom-bridge-" + opts.Name), nats.CustomInboxPrefix(inboxPrefix(opts.Name)),
		nats.MaxReconnects(-1), nats.ReconnectWait(500 * time.Millisecond), nats.RetryOnFailedConnect(true),
		nats.PingInterval(linkPing), nats.MaxPingsOutstanding(linkPingsOut), nats.Timeout(linkConnect),
		nats.IgnoreAuthErrorAbort(), // a refusal (revoked, too many connections) may be lifted
		nats.ReconnectBufSize(-1),   // nothing is buffered while the link is down
		nats.ConnectHandler(func(*nats.Conn) { st.setConnected(true, nil) }),
		nats.ReconnectHandler(func(*nats.Conn) { st.setConnected(true, nil) }),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { st.setConnected(false, err) }),
		nats.ReconnectErrHandler(func(_ *nats.Conn, err error) { st.refused(err) }),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrAuthorization) || strings.Contains(err.Error(), "authorization violation") {
				st.refused(err) // the server turned this host away (revoked, removed, too many connections)
				return
			}
			opts.Log.Warn("link error", "err", err)
		}),
	}
	if tlsFirst {
		nopts = append(nopts, nats.TLSHandshakeFirst())
	}
	st.emit("connecting", nil)
	link, err := nats.Connect(urls, nopts...)
	if err != nil {
		return fmt.Errorf("join %s: %w", opts.Addr, err)
	}
	defer link.Close()
	recheck := func() {
		leaf := server.Load()
		if leaf == nil || !link.IsConnected() {
			return
		}
		if err := opts.Link.Revocation.Check(leaf); err != nil {
			opts.Log.Warn("closing link: " + err.Error())
			_ = link.ForceReconnect()
		}
	}
	route := directPresence
	if tlsFirst { // an intercom-bridge serve: it relays the presence
		route = joinedPresence
	}
	return run(ctx, opts, link, st, route, recheck)
}

// CheckJoinAddr reports what is wrong with a join address, if anything.
func CheckJoinAddr(addr string) error {
	_, _, err := joinURLs(addr)
	return err
}

// joinURLs turns the join address into NATS URLs: "host:port" is a serving
// bridge (TLS handshake first), nats:// and tls:// URLs a NATS server.
func joinURLs(addr string) (string, bool, error) {
	parts := strings.Split(addr, ",")
	external := strings.Contains(addr, "://")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		switch {
		case strings.HasPrefix(p, "tls://"), strings.HasPrefix(p, "nats://"):
			if !external {
				return "", false, fmt.Errorf("join %q: mix of URLs and host:port", addr)
			}
		case strings.Contains(p, "://"):
			return "", false, fmt.Errorf("join %q: want host:port, nats:// or tls:// URLs", addr)
		case external:
			return "", false, fmt.Errorf("join %q: mix of URLs and host:port", addr)
		default:
			p = "tls://" + p
		}
		if strings.HasSuffix(p, "://") {
			return "", false, fmt.Errorf("join %q: empty address", addr)
		}
		parts[i] = p
	}
	return strings.Join(parts, ","), !external, nil
}
