// Package pidfile writes and judges the broker's pid record. Line 1 is the
// pid; on Linux line 2 is "linux-v1 <boot_id> <pid-ns> <start-ticks>", which
// lets a reader prove that a live pid belongs to a different process (pid
// reuse after a reboot or in another namespace) without killing anything.
package pidfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/intercom-dev/intercom/internal/bounded"
)

// Record is a parsed pid file.
type Record struct {
	Pid      int
	Identity *Identity // nil for a numeric-only (legacy) record
}

// Identity identifies one process instance on Linux.
type Identity struct {
	BootID     string
	PidNS      string
	StartTicks uint64
}

// Verdict says what a record means now.
type Verdict int

const (
	// Stale: the process is gone or provably another process.
	Stale Verdict = iota
	// Live: the recorded process is running and is the one that wrote it.
	Live
	// Unprovable: a process with that pid runs, but nothing proves whether it
	// is the writer (legacy record, unreadable metadata).
	Unprovable
)

func (v Verdict) String() string {
	return [...]string{"stale", "live", "unprovable"}[v]
}

// Self returns the identity of pid as seen from this process.
func Self(pid int) (*Identity, error) {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return nil, fmt.Errorf("read boot id: %w", err)
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return nil, fmt.Errorf("read pid namespace: %w", err)
	}
	ticks, err := startTicks(pid)
	if err != nil {
		return nil, err
	}
	return &Identity{BootID: strings.TrimSpace(string(boot)), PidNS: nsID(ns), StartTicks: ticks}, nil
}

func nsID(link string) string {
	// "pid:[4026531836]" -> "4026531836"
	link = strings.TrimPrefix(link, "pid:")
	return strings.Trim(link, "[]")
}

// startTicks reads field 22 of /proc/<pid>/stat.
func startTicks(pid int) (uint64, error) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, fmt.Errorf("read stat of pid %d: %w", pid, err)
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("parse stat of pid %d: no comm", pid)
	}
	fields := strings.Fields(s[i+1:])
	// fields[0] is field 3 (state); start time is field 22 -> index 19.
	if len(fields) < 20 {
		return 0, fmt.Errorf("parse stat of pid %d: short", pid)
	}
	v, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse stat of pid %d: %w", pid, err)
	}
	return v, nil
}

// Format renders a record for pid.
func Format(pid int, id *Identity) string {
	out := strconv.Itoa(pid) + "\n"
	if id != nil {
		out += fmt.Sprintf("linux-v1 %s %s %d\n", id.BootID, id.PidNS, id.StartTicks)
	}
	return out
}

// Write records the current process atomically with mode 0600.
func Write(path string) error {
	pid := os.Getpid()
	id, _ := Self(pid) // identity is best effort; numeric-only is still valid
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(Format(pid, id)), 0o600); err != nil {
		return fmt.Errorf("write pid file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write pid file: %w", err)
	}
	return nil
}

// Parse decodes a pid file.
func Parse(data string) (Record, error) {
	lines := strings.Split(strings.TrimRight(data, "\n"), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil || pid <= 0 {
		return Record{}, fmt.Errorf("parse pid file: bad pid %q", lines[0])
	}
	rec := Record{Pid: pid}
	if len(lines) > 1 {
		f := strings.Fields(lines[1])
		if len(f) != 4 || f[0] != "linux-v1" {
			return Record{}, fmt.Errorf("parse pid file: bad identity line %q", lines[1])
		}
		ticks, err := strconv.ParseUint(f[3], 10, 64)
		if err != nil {
			return Record{}, fmt.Errorf("parse pid file: bad start ticks %q", f[3])
		}
		rec.Identity = &Identity{BootID: f[1], PidNS: f[2], StartTicks: ticks}
	}
	return rec, nil
}

// Read loads path. A missing file is (Record{}, os.ErrNotExist).
func Read(path string) (Record, error) {
	data, err := bounded.ReadFile(path, path, 4096)
	if err != nil {
		return Record{}, err
	}
	return Parse(string(data))
}

// Judge decides whether rec names the process that wrote it.
func Judge(rec Record) Verdict {
	if rec.Pid <= 0 {
		return Stale
	}
	if err := syscall.Kill(rec.Pid, 0); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return Stale
		}
		return Unprovable // EPERM: someone's process, cannot tell whose
	}
	if rec.Identity == nil {
		return Unprovable
	}
	now, err := Self(rec.Pid)
	if err != nil {
		return Unprovable
	}
	if now.BootID != rec.Identity.BootID || now.PidNS != rec.Identity.PidNS {
		return Stale
	}
	if now.StartTicks != rec.Identity.StartTicks {
		return Stale
	}
	return Live
}

// Remove deletes path only if it still records the current process.
func Remove(path string) {
	rec, err := Read(path)
	if err == nil && rec.Pid == os.Getpid() {
		_ = os.Remove(path)
	}
}
