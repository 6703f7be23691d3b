// Command intercom-bridge links intercom brokers on two machines over mutual TLS.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/intercom-dev/intercom/internal/bridgecmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := bridgecmd.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
