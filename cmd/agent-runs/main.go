// Command agent-runs is the supervisor CLI for child agent runs.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/intercom-dev/intercom/internal/runscmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := runscmd.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
