// Package brokercmd is the command line of intercom-broker: flags, config,
// logging, then broker.Run.
package brokercmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"time"

	"github.com/alecthomas/kong"

	"github.com/intercom-dev/intercom/internal/broker"
	"github.com/intercom-dev/intercom/internal/brokerlog"
	"github.com/intercom-dev/intercom/internal/config"
	"github.com/intercom-dev/intercom/internal/detach"
	"github.com/intercom-dev/intercom/internal/kongrun"
	"github.com/intercom-dev/intercom/internal/render"
)

type cmd struct {
	Home     string         `env:"INTERCOM_HOME" help:"State directory." placeholder:"DIR"`
	Socket   string         `env:"INTERCOM_SOCKET" help:"Socket path (default: private dir keyed by uid and home)." placeholder:"PATH"`
	IdleExit *time.Duration `name:"idle-exit" zero:"run forever" help:"Exit this long after the last client leaves; 0 runs forever (default: config idleExitMs, 5s)." placeholder:"DUR"`
	LogLevel string         `name:"log-level" enum:"debug,info,warn,error" default:"info" help:"Log level."`
	LogJSON  bool           `name:"log-json" help:"Log JSON lines."`
	LogFile  string         `name:"log-file" help:"Write the log to this file instead of stderr, rotated at --log-max-size with one backup kept (clients that start the broker pass INTERCOM_HOME/broker.log)." placeholder:"PATH"`
	LogMax   int            `name:"log-max-size" default:"10" help:"Size in MiB at which --log-file is rotated." placeholder:"MIB"`

	VersionFlag kong.VersionFlag `name:"version" help:"Print the version and exit."`
	// Profiling for e2e/bench; hidden from --help.
	CPUProfile string `name:"cpu-profile" hidden:"" help:"Write a CPU profile to this file until exit."`
	MemProfile string `name:"mem-profile" hidden:"" help:"Write an allocation profile to this file at exit."`
	// Shortens the 24-hour retry memory so e2e tests can see it expire.
	RetryMemory time.Duration `name:"retry-memory" hidden:"" help:"Remember client message ids and acks of unstored ids this long (default 24h)." placeholder:"DUR"`

	Serve      serveCmd              `cmd:"" default:"withargs" help:"Run the broker (what a bare intercom-broker does)."`
	Version    versionCmd            `cmd:"" group:"Help and set-up" help:"Print the version, commit and Go version."`
	Help       kongrun.HelpCmd       `cmd:"" group:"Help and set-up" help:"Show help for a command."`
	Completion kongrun.CompletionCmd `cmd:"" group:"Help and set-up" help:"Print a bash, zsh or fish completion script."`
}

type serveCmd struct{}

// Help shows examples.
func (serveCmd) Help() string {
	return `Serves the broker socket until the idle exit (or a signal). Clients run
this on demand; what a bare intercom-broker does.

Examples:
  intercom-broker --idle-exit=0
  intercom-broker serve --home /tmp/ic --log-level debug`
}

// versionCmd is the shared version command with a --json flag of its own
// (the broker has no global --json).
type versionCmd struct {
	kongrun.VersionCmd
	JSON bool `help:"Print JSON."`
}

const description = `The intercom broker. Clients start it on demand; run it yourself with
--idle-exit=0 as a service.

Examples:
  intercom-broker --idle-exit=0
  INTERCOM_HOME=/tmp/ic intercom-broker --log-level debug
  intercom-broker version`

// Main runs the broker; it returns the exit status.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var c cmd
	return kongrun.Run("intercom-broker", &c, args, stdout, stderr, []kong.Option{kong.Name("intercom-broker"),
		kong.Description(description), kong.Writers(stdout, stderr),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
	}, func(*kong.Context) int {
		return kongrun.Report("intercom-broker", stdout, stderr, false, serve(ctx, &c, stderr))
	})
}

// serve configures logging and the layout and runs the broker. A broker
// that stopped because its store could not be written exits with
// kongrun.StatusStoreUnavailable (3); bad flags or config are usage errors
// (2), anything else a failure (1).
func serve(ctx context.Context, c *cmd, stderr io.Writer) error {
	ready := detach.TakeReady() // the client that spawned us waits on it
	var h slog.Handler
	lv := map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}[c.LogLevel]
	out := stderr
	if c.LogFile != "" {
		f := brokerlog.File(c.LogFile, c.LogMax)
		defer f.Close()
		out = f
	}
	if c.LogJSON {
		h = slog.NewJSONHandler(out, &slog.HandlerOptions{Level: lv})
	} else {
		h = slog.NewTextHandler(out, &slog.HandlerOptions{Level: lv})
	}
	fold := brokerlog.Fold(render.LogHandler(h), brokerlog.FoldWindow)
	defer fold.Flush()
	log := slog.New(fold)
	stopProfiles, err := startProfiles(c.CPUProfile, c.MemProfile)
	if err != nil {
		return err
	}
	defer stopProfiles(log)
	layout, cfg, err := config.ForHome(c.Home, c.Socket, func(w string) { log.Warn(w) })
	if err != nil {
		return err // a missing parent or a bad config.json: a usage error (2)
	}
	stuck, err := cfg.Stuck(os.Getenv)
	if err != nil {
		return err
	}
	idle := cfg.IdleExit()
	if c.IdleExit != nil {
		idle = *c.IdleExit
	}
	err = broker.Run(ctx, broker.Options{Layout: layout, IdleExit: idle, RetryMemory: c.RetryMemory, ForgetAfter: cfg.ForgetAfter(),
		Stuck: broker.StallThresholds{BusyAfter: stuck.BusyAfter, SteersAfter: stuck.SteersAfter}, Wake: wakeLimits(cfg), Logger: log, Ready: ready.Signal})
	if errors.Is(err, broker.ErrStoreUnavailable) {
		return kongrun.Exit(kongrun.StatusStoreUnavailable, "") // the broker logged why
	}
	if err != nil { // the one line first, then the log's record of it
		status := kongrun.Report("intercom-broker", nil, stderr, false, err)
		log.Error("broker failed", "err", err)
		return kongrun.Exit(status, "")
	}
	return nil
}

// startProfiles starts a CPU profile and arranges an allocation profile at
// exit, for benchmarks. The returned stop writes and closes them.
func startProfiles(cpu, mem string) (func(*slog.Logger), error) {
	var cpuF *os.File
	if cpu != "" {
		f, err := os.Create(cpu)
		if err != nil {
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
		cpuF = f
	}
	return func(log *slog.Logger) {
		if cpuF != nil {
			pprof.StopCPUProfile()
			cpuF.Close()
		}
		if mem != "" {
			f, err := os.Create(mem)
			if err == nil {
				err = pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
			if err != nil {
				log.Warn("write allocation profile", "err", err)
			}
		}
	}, nil
}

// wakeLimits are the broker's wake budget and loop breaker of cfg.
func wakeLimits(cfg config.Config) *broker.WakeLimits {
	return &broker.WakeLimits{Budget: int(cfg.WakeBudget), Window: time.Duration(cfg.WakeWindowMs) * time.Millisecond, LoopRounds: int(cfg.WakeLoopRounds)}
}
