// Package bridgecmd is the command line of intercom-bridge: certificates,
// serve (a hub), join (a hub or the team's NATS), status, purge and a
// nats-server configuration for the team's NATS.
package bridgecmd

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/alecthomas/kong"

	"github.com/intercom-dev/intercom/internal/kongrun"
	"github.com/intercom-dev/intercom/internal/render"
)

type cli struct {
	JSON     bool   `help:"Print JSON (one object per line for serve and join) and log JSON lines."`
	LogLevel string `name:"log-level" enum:"debug,info,warn,error" default:"info" help:"Log level."`

	Certs struct {
		Init   CertsInitCmd   `cmd:"" help:"Create a CA (ca.crt, ca.key)."`
		Issue  CertsIssueCmd  `cmd:"" help:"Issue HOST.crt and HOST.key (client and server certificate)."`
		Revoke CertsRevokeCmd `cmd:"" help:"Add HOST's certificate to ca.crl."`
		CRL    CertsCRLCmd    `cmd:"" name:"crl" help:"Re-sign ca.crl with a new NextUpdate (or create an empty one)."`
	} `cmd:"" help:"Make the CA, host certificates and the revocation list."`

	Serve      ServeCmd      `cmd:"" help:"Run a hub: listen for the other hosts' bridges (mutual TLS)."`
	Join       JoinCmd       `cmd:"" help:"Join a hub, or the team's NATS server or cluster (mutual TLS)."`
	Status     StatusCmd     `cmd:"" help:"Show the link, the bridged hosts, outbox depths and last errors."`
	Purge      PurgeCmd      `cmd:"" help:"Drop everything a bridged host left here."`
	NATSConfig NATSConfigCmd `cmd:"" name:"nats-config" help:"Write a nats-server configuration for the team's NATS."`

	kongrun.Builtins
}

const description = `Links this machine's intercom broker to other machines' over mutual TLS 1.3,
through NATS: an embedded hub that any number of hosts join, or the team's own
NATS server or cluster. The broker's Unix socket is never exposed: the bridge
is a client of the local broker. Sessions of other machines appear in
'intercom list --scope all' as name@host and are targeted that way.

Examples:
  intercom-bridge certs init --dir ~/.intercom-ca
  intercom-bridge certs issue --dir ~/.intercom-ca --name alpha
  intercom-bridge certs issue --dir ~/.intercom-ca --name beta
  # on alpha, the hub:
  intercom-bridge serve --listen 0.0.0.0:7422 --cert alpha.crt --key alpha.key --ca ca.crt --name alpha --any-peer
  # on beta (and every other host):
  intercom-bridge join alpha.example:7422 --cert beta.crt --key beta.key --ca ca.crt --name beta --peer alpha
  intercom-bridge status

See docs/bridge.md for the three topologies and the security model.`

// env is what every command gets.
type env struct {
	ctx            context.Context
	stdout, stderr io.Writer
	json           bool
	log            *slog.Logger
}

// Main runs intercom-bridge; it returns the exit status.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var c cli
	opts := []kong.Option{kong.Name("intercom-bridge"), kong.Description(description),
		kong.Vars(limitVars()), kong.Writers(stdout, stderr), kong.UsageOnError(),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true})}
	return kongrun.Run("intercom-bridge", &c, args, stdout, stderr, opts, func(kctx *kong.Context) int {
		lv := map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}[c.LogLevel]
		var h slog.Handler = slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lv})
		if c.JSON {
			h = slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: lv})
		}
		e := &env{ctx: ctx, stdout: stdout, stderr: stderr, json: c.JSON, log: slog.New(render.LogHandler(h))}
		return e.report(kctx.Run(e))
	})
}

// report prints err as one line (the error object on stdout with --json)
// and maps it to an exit status (kongrun.Report).
func (e *env) report(err error) int {
	return kongrun.Report("intercom-bridge", e.stdout, e.stderr, e.json, err)
}

// print writes v as one JSON line with --json, else the text.
func (e *env) print(v any, text string) error {
	if e.json {
		return kongrun.PrintJSON(e.stdout, v)
	}
	_, err := fmt.Fprintln(e.stdout, text)
	return err
}
