package bridge

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// ServerConfig describes a nats-server of a team's own NATS (one node of a
// cluster) that the hosts join with `intercom-bridge join tls://…`.
type ServerConfig struct {
	Name          string   // server name (unique per node)
	Listen        string   // client address, host:port
	Cert, Key, CA string   // the server's certificate (from `certs issue`), key and the CA
	Hosts         []string // the hosts that may join: one user each
	Cluster       string   // cluster address host:port, "" for a single server
	ClusterName   string
	Routes        []string // other nodes' cluster addresses
}

// NATSConfig writes a nats-server configuration in which every host's
// certificate maps to a user (verify_and_map) with exactly the subject
// permissions the embedded hub gives it, and the hub's limits.
func NATSConfig(c ServerConfig) (string, error) {
	host, port, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return "", fmt.Errorf("listen address %q: %w", c.Listen, err)
	}
	if _, err := strconv.Atoi(port); err != nil {
		return "", fmt.Errorf("listen address %q: bad port", c.Listen)
	}
	if len(c.Hosts) == 0 {
		return "", fmt.Errorf("no hosts: name them with --peer (or give --dir with their certificates)")
	}
	hosts := append([]string(nil), c.Hosts...)
	sort.Strings(hosts)
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("# nats-server configuration for intercom bridges (intercom-bridge nats-config).\n")
	w("# Each host's certificate maps to the user of its name, allowed only its own subjects.\n")
	if c.Name != "" {
		w("server_name: %q\n", c.Name)
	}
	w("host: %q\nport: %s\n", host, port)
	w("tls {\n  cert_file: %q\n  key_file: %q\n  ca_file: %q\n  verify_and_map: true\n  min_version: \"1.3\"\n  timeout: 2\n}\n", c.Cert, c.Key, c.CA)
	w("max_payload: %d\nmax_pending: %d\nmax_subscriptions: %d\nmax_connections: %d\nwrite_deadline: %q\n",
		wire.MaxLinkPayload, pendingBytes, subsPerConn, connsPerHost*len(hosts), writeDeadline.String())
	w("authorization {\n  users: [\n")
	for _, h := range hosts {
		p := Permissions(h)
		w("    {user: %q, permissions: {\n", h)
		w("      publish: {allow: %s}\n", quoteList(p.Publish.Allow))
		w("      subscribe: {allow: %s}\n", quoteList(p.Subscribe.Allow))
		w("      allow_responses: {max: %d, expires: %q}\n", p.Response.MaxMsgs, p.Response.Expires.String())
		w("    }}\n")
	}
	w("  ]\n}\n")
	if c.Cluster != "" {
		ch, cp, err := net.SplitHostPort(c.Cluster)
		if err != nil {
			return "", fmt.Errorf("cluster address %q: %w", c.Cluster, err)
		}
		name := c.ClusterName
		if name == "" {
			name = "intercom"
		}
		routes := make([]string, len(c.Routes))
		for i, r := range c.Routes {
			routes[i] = "nats-route://" + r
		}
		w("cluster {\n  name: %q\n  host: %q\n  port: %s\n  routes: %s\n}\n", name, ch, cp, quoteList(routes))
	}
	return b.String(), nil
}

func quoteList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
