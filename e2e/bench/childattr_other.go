//go:build !linux

package main

import "syscall"

// childAttr puts a broker or floor process the benchmark starts in its own
// process group (Pdeathsig exists only on Linux; the benchmark's cleanup
// kills its children).
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
