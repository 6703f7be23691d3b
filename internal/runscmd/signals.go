package runscmd

import (
	"os"
	"os/signal"
	"syscall"
)

// signalIgnore keeps the owner alive through terminal hang-ups and Ctrl-C
// aimed at the process that started it; agent-runs stop ends the child.
// The signals are caught (into a channel nobody reads), not ignored: an
// ignored signal stays ignored in the children, and the --on-stuck
// ladder's interrupt (SIGINT) must reach the child.
func signalIgnore() { signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP, syscall.SIGINT) }
