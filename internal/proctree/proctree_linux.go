package proctree

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// get parses /proc/<pid>/stat (proc_pid_stat(5)): the command name is in
// parentheses and may hold spaces, so fields are counted after the last ')'.
func get(pid int) (Proc, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
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

func boot() (string, error) {
	data, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("read boot id: %w", err)
	}
	return strings.TrimSpace(string(data)), nil
}

func args(pid int) ([]string, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return nil, fmt.Errorf("read command line of %d: %w", pid, err)
	}
	return strings.Split(strings.TrimRight(string(data), "\x00"), "\x00"), nil
}
