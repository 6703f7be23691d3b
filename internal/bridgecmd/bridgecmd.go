// Package bridgecmd is the command line of intercom-bridge: certificates,
// serve and join.
package bridgecmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/alecthomas/kong"

	"github.com/intercom-dev/intercom/internal/bridge"
	"github.com/intercom-dev/intercom/internal/certs"
	"github.com/intercom-dev/intercom/internal/kongrun"
	"github.com/intercom-dev/intercom/pkg/intercom"
)

type linkFlags struct {
	Cert string `required:"" type:"existingfile" help:"This host's certificate (from certs issue)." placeholder:"FILE"`
	Key  string `required:"" type:"existingfile" help:"This host's key." placeholder:"FILE"`
	CA   string `name:"ca" required:"" type:"existingfile" help:"The CA certificate both sides trust." placeholder:"FILE"`
	CRL  string `name:"crl" type:"existingfile" help:"Revocation list (default: ca.crl beside the CA, if present)." placeholder:"FILE"`
	Name string `required:"" help:"This host's name (the name in --cert)." placeholder:"HOST"`
	Peer string `required:"" help:"The other host's name; its certificate must carry it." placeholder:"HOST"`
	Home string `env:"INTERCOM_HOME" help:"State directory of the local broker." placeholder:"DIR"`
}

type cli struct {
	JSON     bool   `help:"Log JSON lines and print JSON events."`
	LogLevel string `name:"log-level" enum:"debug,info,warn,error" default:"info" help:"Log level."`

	Certs struct {
		Init   certsInitCmd   `cmd:"" help:"Create a CA (ca.crt, ca.key)."`
		Issue  certsIssueCmd  `cmd:"" help:"Issue HOST.crt and HOST.key (client and server certificate)."`
		Revoke certsRevokeCmd `cmd:"" help:"Add HOST's certificate to ca.crl."`
	} `cmd:"" help:"Make the CA and host certificates."`

	Serve serveCmd `cmd:"" help:"Listen for the peer's bridge (mutual TLS)."`
	Join  joinCmd  `cmd:"" help:"Connect to the peer's serving bridge (mutual TLS)."`

	kongrun.Builtins
}

type certsInitCmd struct {
	Dir string `required:"" help:"Directory for ca.crt and ca.key." placeholder:"DIR"`
}

// Help shows examples.
func (certsInitCmd) Help() string {
	return `Creates the certificate authority both hosts trust: ca.crt (give it to every
host) and ca.key (keep it private, mode 0600).

Examples:
  intercom-bridge certs init --dir ~/.intercom-ca`
}

type certsIssueCmd struct {
	Dir       string        `required:"" help:"Directory holding the CA." placeholder:"DIR"`
	Name      string        `required:"" help:"Host name to certify." placeholder:"HOST"`
	Days      int           `default:"825" help:"Validity in days."`
	NotBefore time.Duration `name:"not-before" offset:"true" hidden:"" help:"Start of validity relative to now (tests)."`
	ValidFor  time.Duration `name:"valid-for" hidden:"" help:"Validity, overrides --days (tests)."`
}

// Help shows examples.
func (certsIssueCmd) Help() string {
	return `Issues HOST.crt and HOST.key, signed by the CA in --dir, usable as both the
client and the server certificate of that host's bridge.

Examples:
  intercom-bridge certs issue --dir ~/.intercom-ca --name alpha
  intercom-bridge certs issue --dir ~/.intercom-ca --name beta --days 90`
}

type certsRevokeCmd struct {
	Dir  string `required:"" help:"Directory holding the CA." placeholder:"DIR"`
	Name string `required:"" help:"Host whose certificate to revoke." placeholder:"HOST"`
}

// Help shows examples.
func (certsRevokeCmd) Help() string {
	return `Adds HOST's certificate to ca.crl beside the CA; bridges that load it
(restart them) refuse that certificate.

Examples:
  intercom-bridge certs revoke --dir ~/.intercom-ca --name beta`
}

type serveCmd struct {
	Listen string `required:"" help:"Address to listen on, e.g. 0.0.0.0:7422 (port 0: any)." placeholder:"ADDR"`
	linkFlags
}

// Help shows examples.
func (serveCmd) Help() string {
	return `Listens for the peer host's bridge and links the two brokers once both
certificates check out.

Examples:
  intercom-bridge serve --listen 0.0.0.0:7422 --cert alpha.crt --key alpha.key --ca ca.crt --name alpha --peer beta
  intercom-bridge --json serve --listen 127.0.0.1:0 --cert alpha.crt --key alpha.key --ca ca.crt --name alpha --peer beta`
}

type joinCmd struct {
	Addr string `arg:"" help:"The serving bridge's address host:port."`
	linkFlags
}

// Help shows examples.
func (joinCmd) Help() string {
	return `Connects to the peer host's serving bridge and links the two brokers;
reconnects when the link drops.

Examples:
  intercom-bridge join alpha.example:7422 --cert beta.crt --key beta.key --ca ca.crt --name beta --peer alpha`
}

const description = `Links this machine's intercom broker to another machine's over mutual TLS 1.3.
The broker's Unix socket is never exposed: the bridge is a client of the
local broker. Sessions of the other machine appear in 'intercom list --scope all'
as name@host and are targeted that way.

Examples:
  intercom-bridge certs init --dir ~/.intercom-ca
  intercom-bridge certs issue --dir ~/.intercom-ca --name alpha
  intercom-bridge certs issue --dir ~/.intercom-ca --name beta
  # on alpha:
  intercom-bridge serve --listen 0.0.0.0:7422 --cert alpha.crt --key alpha.key --ca ca.crt --name alpha --peer beta
  # on beta:
  intercom-bridge join alpha.example:7422 --cert beta.crt --key beta.key --ca ca.crt --name beta --peer alpha`

// Main runs intercom-bridge; it returns the exit status.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var c cli
	return kongrun.Run("intercom-bridge", &c, args, stdout, stderr, []kong.Option{kong.Name("intercom-bridge"),
		kong.Description(description), kong.Writers(stdout, stderr), kong.UsageOnError(),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
	}, func(kctx *kong.Context) int { return run(ctx, &c, kctx, stdout, stderr) })
}

// run carries out the parsed command.
func run(ctx context.Context, c *cli, kctx *kong.Context, stdout, stderr io.Writer) int {
	lv := map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}[c.LogLevel]
	var h slog.Handler = slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lv})
	if c.JSON {
		h = slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: lv})
	}
	log := slog.New(h)
	fail := func(code int, err error) int {
		fmt.Fprintf(stderr, "intercom-bridge: %v\n", err)
		return code
	}
	switch kctx.Command() {
	case "certs init":
		if err := certs.Init(c.Certs.Init.Dir); err != nil {
			return fail(1, err)
		}
		fmt.Fprintf(stdout, "CA written to %s/ca.crt and %s/ca.key (keep ca.key private)\n", c.Certs.Init.Dir, c.Certs.Init.Dir)
	case "certs issue":
		i := c.Certs.Issue
		valid := time.Duration(i.Days) * 24 * time.Hour
		if i.ValidFor != 0 {
			valid = i.ValidFor
		}
		if err := certs.ValidName(i.Name); err != nil {
			return fail(2, err)
		}
		if err := certs.Issue(i.Dir, i.Name, time.Now().Add(i.NotBefore-time.Minute), valid); err != nil {
			return fail(1, err)
		}
		fmt.Fprintf(stdout, "issued %s/%s.crt and %s/%s.key\n", i.Dir, i.Name, i.Dir, i.Name)
	case "certs revoke":
		if err := certs.Revoke(c.Certs.Revoke.Dir, c.Certs.Revoke.Name); err != nil {
			return fail(1, err)
		}
		fmt.Fprintf(stdout, "revoked %s; ca.crl updated (restart bridges to apply)\n", c.Certs.Revoke.Name)
	case "serve", "join <addr>":
		lf, server := c.Serve.linkFlags, true
		if kctx.Command() != "serve" {
			lf, server = c.Join.linkFlags, false
		}
		if err := certs.ValidName(lf.Name); err != nil {
			return fail(2, fmt.Errorf("--name: %w", err))
		}
		tlsCfg, err := certs.Material{Cert: lf.Cert, Key: lf.Key, CA: lf.CA, CRL: lf.CRL, Peer: lf.Peer}.Config(server)
		if err != nil {
			return fail(2, err)
		}
		opts := bridge.Options{Name: lf.Name, Peer: lf.Peer, TLS: tlsCfg, Listen: c.Serve.Listen, Addr: c.Join.Addr,
			Local: intercom.Options{Home: lf.Home, Name: "intercom-bridge", Logger: log}, Log: log,
			Ready: func(addr string) {
				if c.JSON {
					_ = json.NewEncoder(stdout).Encode(map[string]string{"event": "ready", "addr": addr, "name": lf.Name, "peer": lf.Peer})
				} else {
					fmt.Fprintf(stdout, "bridge %s ready (peer %s, %s)\n", lf.Name, lf.Peer, addr)
				}
			}}
		run := bridge.Join
		if server {
			run = bridge.Serve
		}
		if err := run(ctx, opts); err != nil {
			return fail(1, err)
		}
	}
	return 0
}
