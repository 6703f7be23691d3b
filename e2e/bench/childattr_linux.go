package main

import "syscall"

// childAttr puts a broker or floor process the benchmark starts in its own
// process group and has the kernel kill it if the benchmark dies.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
