// Command intercom-hook answers harness hooks (`intercom-hook HARNESS
// EVENT`, as `intercom hook HARNESS EVENT`), linking only what hooks need.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/intercom-dev/intercom/internal/hookcmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := hookcmd.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
