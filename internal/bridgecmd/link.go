package bridgecmd

import (
	"encoding/json"
	"fmt"
	"github.com/intercom-dev/intercom/internal/kongrun"
	"github.com/intercom-dev/intercom/internal/render"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/dustin/go-humanize"

	"github.com/intercom-dev/intercom/internal/bridge"
	"github.com/intercom-dev/intercom/internal/certs"
	"github.com/intercom-dev/intercom/internal/schema"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// linkFlags are shared by serve and join.
type linkFlags struct {
	Cert    string   `required:"" type:"existingfile" help:"This host's certificate (from certs issue)." placeholder:"FILE"`
	Key     string   `required:"" type:"existingfile" help:"This host's key." placeholder:"FILE"`
	CA      string   `name:"ca" required:"" type:"existingfile" help:"The CA certificate every host trusts." placeholder:"FILE"`
	CRL     string   `name:"crl" type:"existingfile" help:"Revocation list (default: ca.crl beside the CA, if present); re-read when it changes and on SIGHUP." placeholder:"FILE"`
	Name    string   `required:"" help:"This host's name (the name in --cert)." placeholder:"HOST"`
	Peer    []string `help:"A host to link with; its certificate must carry the name. Repeatable." placeholder:"HOST"`
	AnyPeer bool     `name:"any-peer" help:"Link with every host that has a certificate from the CA."`
	Export  []string `help:"Let other hosts use the topics under PREFIX (HOST=PREFIX: that host only). Repeatable; nothing is exported by default." placeholder:"[HOST=]PREFIX"`
	Home    string   `env:"INTERCOM_HOME" help:"State directory of the local broker." placeholder:"DIR"`

	Quota quotaFlags `embed:"" group:"Quotas of each remote host here (sizes like 64MiB)"`
}

// quotaFlags are the limits of each remote host here.
type quotaFlags struct {
	MsgsPerSec    float64  `name:"max-msgs-per-sec" default:"${max_msgs_per_sec}" help:"Messages and topic operations per second."`
	BytesPerSec   byteSize `name:"max-bytes-per-sec" default:"${max_bytes_per_sec}" help:"Their bytes per second."`
	InboxMessages int      `name:"max-inbox-messages" default:"${max_inbox_messages}" help:"Unread messages from the host, all inboxes together."`
	InboxBytes    byteSize `name:"max-inbox-bytes" default:"${max_inbox_bytes}" help:"Their bytes."`
	TopicRecords  int      `name:"max-topic-records" default:"${max_topic_records}" help:"Topic records of the host's sessions."`
	TopicBytes    byteSize `name:"max-topic-bytes" default:"${max_topic_bytes}" help:"Their bytes."`
	Subscriptions int      `name:"max-subscriptions" default:"${max_subscriptions}" help:"Topic subscriptions of the host's sessions."`
	PresenceRows  int      `name:"max-presence-rows" default:"${max_presence_rows}" help:"Sessions listed for the host."`
	Hosts         int      `name:"max-hosts" default:"${max_hosts}" help:"Bridged hosts known at once."`
}

// byteSize is a byte count written like 64MiB or 1048576.
type byteSize int64

func (b *byteSize) UnmarshalText(text []byte) error {
	n, err := humanize.ParseBytes(string(text))
	if err != nil || n > 1<<50 {
		return fmt.Errorf("invalid size %q: want bytes or a size like 64MiB", text)
	}
	*b = byteSize(n)
	return nil
}

func fmtBytes(n int64) string {
	if n%(1<<20) == 0 {
		return strconv.FormatInt(n>>20, 10) + "MiB"
	}
	return strconv.FormatInt(n, 10)
}

// limitVars are the quota flags' defaults, from wire.DefaultBridgeLimits.
func limitVars() map[string]string {
	d := wire.DefaultBridgeLimits()
	return map[string]string{
		"max_msgs_per_sec": strconv.FormatFloat(d.MsgsPerSec, 'g', -1, 64), "max_bytes_per_sec": fmtBytes(d.BytesPerSec),
		"max_inbox_messages": strconv.Itoa(d.InboxMessages), "max_inbox_bytes": fmtBytes(d.InboxBytes),
		"max_topic_records": strconv.Itoa(d.TopicRecords), "max_topic_bytes": fmtBytes(d.TopicBytes),
		"max_subscriptions": strconv.Itoa(d.Subscriptions), "max_presence_rows": strconv.Itoa(d.PresenceRows),
		"max_hosts": strconv.Itoa(d.Hosts),
	}
}

func (q quotaFlags) limits() (wire.BridgeLimits, error) {
	l := wire.BridgeLimits{MsgsPerSec: q.MsgsPerSec, BytesPerSec: int64(q.BytesPerSec), InboxMessages: q.InboxMessages,
		InboxBytes: int64(q.InboxBytes), TopicRecords: q.TopicRecords, TopicBytes: int64(q.TopicBytes),
		Subscriptions: q.Subscriptions, PresenceRows: q.PresenceRows, Hosts: q.Hosts}
	if l.MsgsPerSec <= 0 || l.BytesPerSec <= 0 || l.InboxMessages <= 0 || l.InboxBytes <= 0 || l.TopicRecords <= 0 ||
		l.TopicBytes <= 0 || l.Subscriptions <= 0 || l.PresenceRows <= 0 || l.Hosts <= 0 {
		return l, kongrun.Usagef("quotas must be positive")
	}
	return l, nil
}

// ServeCmd runs a hub.
type ServeCmd struct {
	Listen string `required:"" help:"Address to listen on, e.g. 0.0.0.0:7422 (port 0: any)." placeholder:"ADDR"`
	linkFlags
}

// Help shows examples.
func (ServeCmd) Help() string {
	return `Runs a hub: an embedded NATS server on --listen (TLS 1.3 first, client
certificates required) that the hosts named by --peer, or every host of the
CA with --any-peer, join with 'intercom-bridge join'. Each host's certificate
maps to a NATS user allowed only its own subjects, at most 2 connections per
host. This host takes part like any other. Prints one "ready" line (a JSON
object with --json) once it serves.

Examples:
  # two machines:
  intercom-bridge serve --listen 0.0.0.0:7422 --cert alpha.crt --key alpha.key --ca ca.crt --name alpha --peer beta
  # a hub for the whole team, sharing the topics under deploy/:
  intercom-bridge serve --listen 0.0.0.0:7422 --cert alpha.crt --key alpha.key --ca ca.crt --name alpha --any-peer --export deploy/`
}

// Run serves.
func (s *ServeCmd) Run(e *env) error {
	opts, release, err := s.options(e)
	if err != nil {
		return err
	}
	defer release()
	opts.Listen = s.Listen
	return bridge.Serve(e.ctx, opts)
}

// JoinCmd joins a hub or the team's NATS.
type JoinCmd struct {
	Addr       string `arg:"" help:"host:port of a hub (intercom-bridge serve), or nats:// or tls:// URLs of the team's NATS (comma-separated)." placeholder:"ADDR"`
	ServerName string `name:"server-name" help:"The name in the server's certificate (default: the first --peer)." placeholder:"NAME"`
	linkFlags
}

// Help shows examples.
func (JoinCmd) Help() string {
	return `Connects to a hub ("host:port" of an intercom-bridge serve) or to the team's own
NATS server or cluster (nats:// or tls:// URLs; see 'intercom-bridge
nats-config'), with this host's certificate, and reconnects by itself. The
server's certificate must name --server-name (default: the first --peer).
Prints "connecting", then "ready" once linked; "refused" lines say why a
connection attempt failed.

Examples:
  # two machines (alpha serves):
  intercom-bridge join alpha.example:7422 --cert beta.crt --key beta.key --ca ca.crt --name beta --peer alpha
  # a hub with any number of hosts:
  intercom-bridge join hub.example:7422 --cert gamma.crt --key gamma.key --ca ca.crt --name gamma --any-peer --server-name alpha
  # the team's NATS cluster (its servers' certificates name "nats"):
  intercom-bridge join tls://n1.example:4222,tls://n2.example:4222 --cert gamma.crt --key gamma.key --ca ca.crt --name gamma --any-peer --server-name nats`
}

// Run joins.
func (j *JoinCmd) Run(e *env) error {
	if err := bridge.CheckJoinAddr(j.Addr); err != nil {
		return kongrun.Usage(err)
	}
	opts, release, err := j.options(e)
	if err != nil {
		return err
	}
	defer release()
	opts.Addr, opts.ServerName = j.Addr, j.ServerName
	if opts.ServerName == "" {
		if len(j.Peer) == 0 {
			return kongrun.Usagef("--server-name: name the server's certificate (with --any-peer there is no first --peer)")
		}
		opts.ServerName = j.Peer[0]
	}
	if err := certs.ValidName(opts.ServerName); err != nil {
		return kongrun.Usagef("--server-name: %v", err)
	}
	return bridge.Join(e.ctx, opts)
}

// options checks the flags and builds the bridge's options; release drops
// the bridge lock.
func (f *linkFlags) options(e *env) (bridge.Options, func(), error) {
	var opts bridge.Options
	if err := certs.ValidName(f.Name); err != nil {
		return opts, nil, kongrun.Usagef("--name: %v", err)
	}
	peers := certs.Peers{Names: f.Peer, Any: f.AnyPeer}
	if err := peers.Validate(); err != nil {
		return opts, nil, kongrun.Usage(err)
	}
	for _, p := range f.Peer {
		if p == f.Name {
			return opts, nil, kongrun.Usagef("--peer %s is this host (--name)", p)
		}
	}
	exports, err := parseExports(f.Export)
	if err != nil {
		return opts, nil, err
	}
	limits, err := f.Quota.limits()
	if err != nil {
		return opts, nil, err
	}
	link, err := certs.Material{Cert: f.Cert, Key: f.Key, CA: f.CA, CRL: f.CRL}.Load()
	if err != nil {
		return opts, nil, kongrun.Usage(err)
	}
	if leaf := link.Leaf(); leaf != nil {
		if own, err := certs.HostName(leaf); err != nil || own != f.Name {
			return opts, nil, kongrun.Usagef("--cert names %q, not --name %q", leaf.Subject.CommonName, f.Name)
		}
	}
	release, err := bridge.Lock(f.Home)
	if err != nil {
		return opts, nil, err
	}
	if st := link.Revocation.Status(); !st.Loaded {
		e.log.Warn("NO REVOCATION LIST LOADED: a revoked certificate would still be accepted; create one with `intercom-bridge certs crl --dir CA` and copy it beside the CA (or pass --crl)", "looked_for", st.Path)
	} else if st.Stale {
		e.log.Error("the revocation list is past its NextUpdate: every peer is refused until it is refreshed (intercom-bridge certs crl)", "path", st.Path, "next_update", st.NextUpdate)
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	reload := make(chan struct{}, 1)
	go func() {
		for range hup {
			select {
			case reload <- struct{}{}:
			default:
			}
		}
	}()
	opts = bridge.Options{Name: f.Name, Peers: peers, Link: link, Exports: exports, Limits: limits,
		Local: intercom.Options{Home: f.Home, Name: "intercom-bridge", Logger: e.log}, Log: e.log,
		Reload: reload, Events: f.printer(e)}
	return opts, func() { signal.Stop(hup); release() }, nil
}

// parseExports reads --export [HOST=]PREFIX values.
func parseExports(values []string) ([]bridge.Export, error) {
	var out []bridge.Export
	for _, v := range values {
		host, prefix, scoped := strings.Cut(v, "=")
		if !scoped {
			host, prefix = "", v
		} else if err := certs.ValidName(host); err != nil {
			return nil, kongrun.Usagef("--export %q: %v", v, err)
		}
		name := strings.TrimRight(prefix, "/:.")
		if err := wire.ValidateTopic(name); err != nil || strings.Contains(prefix, "@") {
			return nil, kongrun.Usagef("--export %q: not a topic prefix (letters, digits and . _ : / -, no @)", v)
		}
		out = append(out, bridge.Export{Host: host, Prefix: prefix})
	}
	return out, nil
}

// printer prints the bridge's events: one line each, JSON with --json.
func (f *linkFlags) printer(e *env) func(bridge.Event) {
	peers := certs.Peers{Names: f.Peer, Any: f.AnyPeer}.String()
	return func(ev bridge.Event) {
		if e.json {
			data, _ := json.Marshal(schema.BridgeEvent{Event: ev.Kind, Addr: ev.Addr, Name: f.Name, Peer: peers, Error: ev.Error})
			fmt.Fprintln(e.stdout, string(data))
			return
		}
		switch ev.Kind {
		case "ready":
			fmt.Fprintf(e.stdout, "bridge %s ready (peers: %s; %s)\n", f.Name, peers, ev.Addr)
		case "connecting":
			fmt.Fprintf(e.stdout, "bridge %s connecting to %s…\n", f.Name, ev.Addr)
		case "refused":
			fmt.Fprintf(e.stdout, "link refused (%s): %s\n", render.Line(ev.Addr), render.Line(ev.Error))
		case "down":
			fmt.Fprintf(e.stdout, "link down (%s): %s\n", render.Line(ev.Addr), render.Line(ev.Error))
		}
	}
}
