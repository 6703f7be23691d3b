package runscmd

import (
	"os/signal"
	"syscall"
)

// signalIgnore keeps the owner alive through terminal hang-ups and Ctrl-C
// aimed at the process that started it; agent-runs stop ends the child.
func signalIgnore() { signal.Ignore(syscall.SIGHUP, syscall.SIGINT) }
