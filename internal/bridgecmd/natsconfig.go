package bridgecmd

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/intercom-dev/intercom/internal/atomicfile"
	"github.com/intercom-dev/intercom/internal/bridge"
	"github.com/intercom-dev/intercom/internal/certs"
	"github.com/intercom-dev/intercom/internal/kongrun"
	"github.com/intercom-dev/intercom/internal/schema"
)

// NATSConfigCmd writes a nats-server configuration for the team's NATS.
type NATSConfigCmd struct {
	Listen      string   `default:"0.0.0.0:4222" help:"Client address of the server." placeholder:"ADDR"`
	Cert        string   `required:"" help:"The server's certificate (from certs issue, e.g. --name nats)." placeholder:"FILE"`
	Key         string   `required:"" help:"The server's key." placeholder:"FILE"`
	CA          string   `name:"ca" required:"" help:"The CA certificate." placeholder:"FILE"`
	Peer        []string `help:"A host that may join (repeatable)." placeholder:"HOST"`
	Dir         string   `help:"The CA directory: every host certificate in it that is not revoked may join." placeholder:"DIR"`
	ServerName  string   `name:"server-name" help:"This node's name (unique in a cluster)." placeholder:"NAME"`
	Cluster     string   `help:"This node's cluster address, for a cluster." placeholder:"ADDR"`
	ClusterName string   `name:"cluster-name" default:"intercom" help:"The cluster's name."`
	Route       []string `help:"Another node's cluster address (repeatable)." placeholder:"ADDR"`
	Output      string   `short:"o" help:"Write the configuration to FILE (default: stdout)." placeholder:"FILE"`
}

// Help shows examples.
func (NATSConfigCmd) Help() string {
	return `Writes a nats-server configuration for the team's own NATS server or cluster:
TLS with the CA (verify_and_map: each host's certificate maps to the user of
its name), one user per host allowed only its own subjects (exactly the hub's
rules), payload, pending and connection limits. Hosts then join it with
'intercom-bridge join tls://…'. After a revocation, write it again and reload
the servers (nats-server --signal reload): the revoked host's user is gone
and its connections are closed.

Examples:
  intercom-bridge certs issue --dir ./ca --name nats
  intercom-bridge nats-config --cert ca/nats.crt --key ca/nats.key --ca ca/ca.crt --dir ./ca -o nats.conf
  nats-server -c nats.conf
  # one node of a three-node cluster:
  intercom-bridge nats-config --cert nats.crt --key nats.key --ca ca.crt --dir ./ca --server-name n1 \
    --listen 0.0.0.0:4222 --cluster 0.0.0.0:6222 --route n2.example:6222 --route n3.example:6222 -o n1.conf`
}

// Run writes the configuration.
func (n *NATSConfigCmd) Run(e *env) error {
	hosts := append([]string(nil), n.Peer...)
	if n.Dir != "" {
		found, err := certifiedHosts(n.Dir)
		if err != nil {
			return err
		}
		hosts = append(hosts, found...)
	}
	for _, h := range hosts {
		if err := certs.ValidName(h); err != nil {
			return kongrun.Usagef("--peer: %v", err)
		}
	}
	server := ""
	if leaf, err := certs.LoadCert(n.Cert); err == nil {
		server = leaf.Subject.CommonName
	}
	kept := hosts[:0]
	seen := map[string]bool{}
	for _, h := range hosts {
		if !seen[h] && h != server { // the server's own certificate is not a host
			seen[h] = true
			kept = append(kept, h)
		}
	}
	abs := func(p string) string {
		if a, err := filepath.Abs(p); err == nil {
			return a
		}
		return p
	}
	text, err := bridge.NATSConfig(bridge.ServerConfig{Name: n.ServerName, Listen: n.Listen, Cert: abs(n.Cert), Key: abs(n.Key), CA: abs(n.CA),
		Hosts: kept, Cluster: n.Cluster, ClusterName: n.ClusterName, Routes: n.Route})
	if err != nil {
		return kongrun.Usage(err)
	}
	if n.Output != "" {
		if err := atomicfile.WriteFile(n.Output, []byte(text), 0o600); err != nil {
			return err
		}
		return e.print(schema.NATSConfig{Written: n.Output, Hosts: kept}, fmt.Sprintf("wrote %s (hosts: %s)", n.Output, strings.Join(kept, ", ")))
	}
	if e.json {
		return e.print(schema.NATSConfig{Config: text, Hosts: kept}, "")
	}
	_, err = fmt.Fprint(e.stdout, text)
	return err
}

// certifiedHosts lists the hosts with a certificate in the CA directory that
// the CA signed and the CRL does not revoke.
func certifiedHosts(dir string) ([]string, error) {
	ca, err := certs.LoadCert(filepath.Join(dir, certs.CACert))
	if err != nil {
		return nil, err
	}
	rev, err := certs.NewRevocation(filepath.Join(dir, certs.CRL), false, ca)
	if err != nil {
		return nil, err
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.crt"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range paths {
		if filepath.Base(p) == certs.CACert {
			continue
		}
		leaf, err := certs.LoadCert(p)
		if err != nil || leaf.CheckSignatureFrom(ca) != nil || rev.Check(leaf) != nil {
			continue
		}
		if host, err := certs.HostName(leaf); err == nil {
			out = append(out, host)
		}
	}
	sort.Strings(out)
	return out, nil
}
