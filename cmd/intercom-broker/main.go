// Command intercom-broker is the intercom daemon.
package main

import (
	"os"

	"github.com/intercom-dev/intercom/internal/brokercmd"
)

func main() {
	ctx, stop := brokercmd.SignalContext(os.Stderr)
	code := brokercmd.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
