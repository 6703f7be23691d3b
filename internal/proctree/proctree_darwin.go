package proctree

import (
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

// get reads the kinfo_proc of pid through sysctl kern.proc.pid.<pid>
// (sysctl(3)): e_ppid is the parent, p_starttime the start time.
func get(pid int) (Proc, error) {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return Proc{}, fmt.Errorf("read process %d: %w", pid, err)
	}
	if int(kp.Proc.P_pid) != pid {
		// sysctl answers an empty record for a pid that does not exist.
		return Proc{}, fmt.Errorf("read process %d: no such process", pid)
	}
	tv := kp.Proc.P_starttime
	start := uint64(tv.Sec)*1_000_000 + uint64(tv.Usec)
	return Proc{Pid: pid, PPid: int(kp.Eproc.Ppid), Start: start, Comm: unix.ByteSliceToString(kp.Proc.P_comm[:])}, nil
}

func boot() (string, error) {
	tv, err := unix.SysctlTimeval("kern.boottime")
	if err != nil {
		return "", fmt.Errorf("read boot time: %w", err)
	}
	return strconv.FormatInt(int64(tv.Sec), 10) + "." + strconv.FormatInt(int64(tv.Usec), 10), nil
}

// args: reading another process's arguments needs KERN_PROCARGS2, which
// nothing here relies on.
func args(pid int) ([]string, error) {
	return nil, fmt.Errorf("read command line of %d: %w", pid, ErrUnsupported)
}
