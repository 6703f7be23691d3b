package procinfo

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// szomb is p_stat of a process awaiting collection by its parent
// (SZOMB in xnu bsd/sys/proc.h).
const szomb = 5

// Read asks the kernel for the process's struct kinfo_proc (sysctl
// CTL_KERN, KERN_PROC, KERN_PROC_PID, pid). For a pid with no process the
// kernel returns no bytes, which unix.SysctlKinfoProc reports as an error.
func Read(pid int) (Info, error) {
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return Info{}, fmt.Errorf("read process %d: %w", pid, err)
	}
	p := k.Proc
	if int(p.P_pid) != pid {
		return Info{}, fmt.Errorf("read process %d: the kernel described pid %d", pid, p.P_pid)
	}
	start := uint64(p.P_starttime.Sec)*1_000_000 + uint64(p.P_starttime.Usec)
	return Info{Name: unix.ByteSliceToString(p.P_comm[:]), Parent: int(k.Eproc.Ppid), Zombie: p.P_stat == szomb, Start: start}, nil
}
