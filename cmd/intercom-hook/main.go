// Command intercom-hook answers harness hooks (`intercom-hook HARNESS
// EVENT`, as `intercom hook HARNESS EVENT`), linking only what hooks need.
// It installs no signal handler of its own (hookcmd.Main does, for a Stop
// hook's --hold wait only): os/signal's handler costs a hook process two
// threads at start, and a hook that is interrupted mid-call ends as its
// harness expects, without a reply (see hookcmd.Main).
package main

import (
	"context"
	"os"

	"github.com/intercom-dev/intercom/internal/hookcmd"
)

func main() {
	os.Exit(hookcmd.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
