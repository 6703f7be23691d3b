// Package brokercmd is the command line of intercom-broker: flags, config,
// logging, then broker.Run.
package brokercmd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"time"

	"github.com/alecthomas/kong"

	"github.com/intercom-dev/intercom/internal/broker"
	"github.com/intercom-dev/intercom/internal/config"
	"github.com/intercom-dev/intercom/internal/kongrun"
	"github.com/intercom-dev/intercom/internal/paths"
	"github.com/intercom-dev/intercom/internal/spawn"
)

// Version is set by the linker.
var Version = "dev"

type cmd struct {
	Home     string           `env:"INTERCOM_HOME" help:"State directory." placeholder:"DIR"`
	Socket   string           `env:"INTERCOM_SOCKET" help:"Socket path (default: private dir keyed by uid and home)." placeholder:"PATH"`
	IdleExit *time.Duration   `name:"idle-exit" zero:"run forever" help:"Exit this long after the last client leaves; 0 runs forever (default: config idleExitMs, 5s)." placeholder:"DUR"`
	LogLevel string           `name:"log-level" enum:"debug,info,warn,error" default:"info" help:"Log level."`
	LogJSON  bool             `name:"log-json" help:"Log JSON lines."`
	Version  kong.VersionFlag `help:"Print the version and exit."`
	// Profiling for e2e/bench; hidden from --help.
	CPUProfile string `name:"cpu-profile" hidden:"" help:"Write a CPU profile to this file until exit."`
	MemProfile string `name:"mem-profile" hidden:"" help:"Write an allocation profile to this file at exit."`
}

// Main runs the broker; it returns the exit status.
func Main(ctx context.Context, args []string, stderr io.Writer) int {
	var c cmd
	parser, err := kong.New(&c, kong.Name("intercom-broker"),
		kong.Description("The intercom broker. Clients start it on demand; run it yourself with --idle-exit=0 as a service.\n\nExamples:\n  intercom-broker --idle-exit=0\n  INTERCOM_HOME=/tmp/ic intercom-broker --log-level debug"),
		kong.Vars{"version": Version}, kong.Writers(stderr, stderr), kongrun.DurationMapper())
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
	stopProfiles, err := startProfiles(c.CPUProfile, c.MemProfile)
	if err != nil {
		fmt.Fprintf(stderr, "intercom-broker: %v\n", err)
		return 1
	}
	defer stopProfiles(log)
	layout, err := paths.Resolve(c.Home, c.Socket)
	if err == nil && c.Home != "" {
		err = paths.CheckParent(layout.Home)
	}
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
	if err := broker.Run(ctx, broker.Options{Layout: layout, IdleExit: idle, ForgetAfter: cfg.ForgetAfter(), Logger: log, Ready: spawn.SignalReady}); err != nil {
		fmt.Fprintf(stderr, "intercom-broker: %v\n", err)
		log.Error("broker failed", "err", err)
		return 1
	}
	return 0
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
