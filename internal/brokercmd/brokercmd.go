// Package brokercmd is the command line of intercom-broker: flags, config,
// logging, then broker.Run.
package brokercmd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/alecthomas/kong"

	"github.com/intercom-dev/intercom/internal/broker"
	"github.com/intercom-dev/intercom/internal/config"
	"github.com/intercom-dev/intercom/internal/paths"
)

// Version is set by the linker.
var Version = "dev"

type cmd struct {
	Home     string           `env:"INTERCOM_HOME" help:"State directory." placeholder:"DIR"`
	Socket   string           `env:"INTERCOM_SOCKET" help:"Socket path (default: private dir keyed by uid and home)." placeholder:"PATH"`
	IdleExit *time.Duration   `name:"idle-exit" help:"Exit this long after the last client leaves; 0 runs forever (default: config idleExitMs, 5s)." placeholder:"DUR"`
	LogLevel string           `name:"log-level" enum:"debug,info,warn,error" default:"info" help:"Log level."`
	LogJSON  bool             `name:"log-json" help:"Log JSON lines."`
	Version  kong.VersionFlag `help:"Print the version and exit."`
}

// Main runs the broker; it returns the exit status.
func Main(ctx context.Context, args []string, stderr io.Writer) int {
	var c cmd
	parser, err := kong.New(&c, kong.Name("intercom-broker"),
		kong.Description("The intercom broker. Clients start it on demand; run it yourself with --idle-exit=0 as a service.\n\nExamples:\n  intercom-broker --idle-exit=0\n  INTERCOM_HOME=/tmp/ic intercom-broker --log-level debug"),
		kong.Vars{"version": Version}, kong.Writers(stderr, stderr))
	if err != nil {
		fmt.Fprintf(stderr, "intercom-broker: %v\n", err)
		return 1
	}
	if _, err := parser.Parse(args); err != nil {
		fmt.Fprintf(stderr, "intercom-broker: %v\n", err)
		return 2
	}
	var h slog.Handler
	lv := map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}[c.LogLevel]
	if c.LogJSON {
		h = slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: lv})
	} else {
		h = slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lv})
	}
	log := slog.New(h)
	layout, err := paths.Resolve(c.Home, c.Socket)
	if err != nil {
		fmt.Fprintf(stderr, "intercom-broker: %v\n", err)
		return 1
	}
	cfg, warnings, err := config.Load(layout.ConfigFile())
	for _, w := range warnings {
		log.Warn(w)
	}
	if err != nil {
		fmt.Fprintf(stderr, "intercom-broker: %v\n", err)
		return 2
	}
	idle := cfg.IdleExit()
	if c.IdleExit != nil {
		idle = *c.IdleExit
	}
	if err := broker.Run(ctx, broker.Options{Layout: layout, IdleExit: idle, Logger: log}); err != nil {
		fmt.Fprintf(stderr, "intercom-broker: %v\n", err)
		log.Error("broker failed", "err", err)
		return 1
	}
	return 0
}
