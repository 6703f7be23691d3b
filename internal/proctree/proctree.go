// Package proctree reads the process tree: a process's parent, its command
// name and a start stamp that, with the pid, names one process instance
// (a pid can be reused, a pid with its start stamp cannot). Each operating
// system has its own small reader (/proc on Linux, sysctl kern.proc on
// macOS); elsewhere every lookup fails with errors.ErrUnsupported.
package proctree

import (
	"errors"
	"os"
	"strconv"
)

// Proc is one process instance.
type Proc struct {
	Pid   int
	PPid  int
	Start uint64 // start stamp: clock ticks since boot (Linux), µs since the epoch (macOS)
	Comm  string // command name as the kernel keeps it (may be truncated)
}

// Key names the instance: "<pid>-<start>".
func (p Proc) Key() string { return strconv.Itoa(p.Pid) + "-" + strconv.FormatUint(p.Start, 10) }

// ErrUnsupported is returned where the process tree cannot be read.
var ErrUnsupported = errors.ErrUnsupported

// Get reads one process.
func Get(pid int) (Proc, error) { return get(pid) }

// Args returns the command line of pid (Linux only; elsewhere
// ErrUnsupported).
func Args(pid int) ([]string, error) { return args(pid) }

// Boot names the current boot (the same value for every process until the
// machine restarts), so a start stamp can be told apart across reboots.
func Boot() (string, error) { return boot() }

// Ancestors returns the parent chain of pid, nearest first, up to (not
// including) pid 1 and at most max entries. It stops quietly at the first
// process it cannot read. Of this process it reads only the parent (whose
// pid os.Getppid knows): a hook walks from itself at every call.
func Ancestors(pid, max int) []Proc {
	var out []Proc
	p := Proc{Pid: pid, PPid: os.Getppid()}
	if pid != os.Getpid() {
		var err error
		if p, err = Get(pid); err != nil {
			return nil
		}
	}
	for len(out) < max && p.PPid > 1 {
		parent, err := Get(p.PPid)
		if err != nil {
			break
		}
		out = append(out, parent)
		p = parent
	}
	return out
}

// Alive reports whether the process instance p still runs.
func Alive(p Proc) bool {
	now, err := Get(p.Pid)
	return err == nil && now.Start == p.Start
}
