// Command intercom-broker is the intercom daemon.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/intercom-dev/intercom/internal/brokercmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := brokercmd.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
