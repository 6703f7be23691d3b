//go:build unix

package detach

import "syscall"

// sysProcAttr puts the child in a session of its own (setsid): it has no
// controlling terminal and gets no signal meant for the starter's.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// closeOnExec keeps fd from the processes this one execs.
func closeOnExec(fd int) { syscall.CloseOnExec(fd) }
