// Command intercom is the peer CLI and session holder.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/intercom-dev/intercom/internal/intercomcmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := intercomcmd.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
