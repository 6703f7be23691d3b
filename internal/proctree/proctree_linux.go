package proctree

import (
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// get parses /proc/<pid>/stat (proc_pid_stat(5)): the command name is in
// parentheses and may hold spaces, so fields are counted after the last ')'.
func get(pid int) (Proc, error) {
	data, err := readProc("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Proc{}, fmt.Errorf("read process %d: %w", pid, err)
	}
	s := string(data)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return Proc{}, fmt.Errorf("parse /proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[end+1:])
	// f[0] is field 3 (state): ppid is field 4, starttime field 22.
	if len(f) < 20 {
		return Proc{}, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(f)+2)
	}
	ppid, err1 := strconv.Atoi(f[1])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil {
		return Proc{}, fmt.Errorf("parse /proc/%d/stat: bad ppid or start time", pid)
	}
	return Proc{Pid: pid, PPid: ppid, Start: start, Comm: s[open+1 : end]}, nil
}

// boot is the kernel's boot id, read once per process (it cannot change
// while a process runs; a binding's Load compares it every time).
var boot = sync.OnceValues(func() (string, error) {
	data, err := readProc("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("read boot id: %w", err)
	}
	return strings.TrimSpace(string(data)), nil
})

func args(pid int) ([]string, error) {
	data, err := readProc("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return nil, fmt.Errorf("read command line of %d: %w", pid, err)
	}
	return strings.Split(strings.TrimRight(string(data), "\x00"), "\x00"), nil
}

// readProc reads a /proc file whole. It is os.ReadFile in three system
// calls (open, read until the end, close) instead of about ten: a /proc
// file cannot be polled, so the os package's attempt to register it with
// the poller, and its stat for the size (0 for /proc files), are wasted,
// and a hook reads one for each of its ancestors.
func readProc(path string) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	buf := make([]byte, 0, 1024)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}
