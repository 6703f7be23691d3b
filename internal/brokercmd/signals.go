package brokercmd

import (
	"context"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
)

// stopSignals end the broker: SIGINT, SIGTERM and SIGHUP stop it cleanly;
// SIGQUIT first writes every goroutine's stack to stderr (as Go would) and
// then stops it the same way.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// SignalContext returns a context cancelled by the first stop signal. The
// broker's shutdown is bounded; a second signal gets the default action
// (the process ends at once).
func SignalContext(stderr io.Writer) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, stopSignals...)
	go func() {
		select {
		case sig := <-ch:
			if sig == syscall.SIGQUIT {
				_ = pprof.Lookup("goroutine").WriteTo(stderr, 2)
			}
			signal.Reset(stopSignals...)
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		cancel()
	}
}
