// Package pidfile writes and judges the broker's pid record. Line 1 is the
// pid; line 2 identifies that process instance, so that a reader can prove
// that a live pid now belongs to a different process (pid reuse after a
// reboot or in another namespace) without killing anything:
//
//	linux-v1 <boot_id> <pid-ns inode> <start time, clock ticks after boot>
//	darwin-v1 <kern.boottime seconds> <start time, µs since the epoch>
//
// On macOS the boot time is recorded for diagnosis but not compared: the
// kernel moves kern.boottime whenever the wall clock is stepped, while a
// process's start time is stored once at fork.
package pidfile

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/intercom-dev/intercom/internal/atomicfile"
	"github.com/intercom-dev/intercom/internal/bounded"
)

// Record is a parsed pid file.
type Record struct {
	Pid      int
	Identity *Identity // nil for a numeric-only (legacy) record
}

// Identity identifies one process instance.
type Identity struct {
	Scheme string // schemeLinux or schemeDarwin: the OS that wrote it
	Boot   string // Linux: boot_id; macOS: kern.boottime in seconds
	PidNS  string // Linux: the pid namespace's inode; macOS: ""
	Start  uint64 // the process's start time (procinfo.Info.Start)
}

// Identity schemes, the first word of line 2.
const (
	schemeLinux  = "linux-v1"
	schemeDarwin = "darwin-v1"
)

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

// Format renders a record for pid.
func Format(pid int, id *Identity) string {
	out := strconv.Itoa(pid) + "\n"
	switch {
	case id == nil:
	case id.Scheme == schemeDarwin:
		out += fmt.Sprintf("%s %s %d\n", schemeDarwin, id.Boot, id.Start)
	default:
		out += fmt.Sprintf("%s %s %s %d\n", schemeLinux, id.Boot, id.PidNS, id.Start)
	}
	return out
}

// Write records the current process atomically with mode 0600.
func Write(path string) error {
	pid := os.Getpid()
	id, _ := Self(pid) // identity is best effort; numeric-only is still valid
	if err := atomicfile.WriteFile(path, []byte(Format(pid, id)), 0o600); err != nil {
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
		id, err := parseIdentity(lines[1])
		if err != nil {
			return Record{}, err
		}
		rec.Identity = id
	}
	return rec, nil
}

func parseIdentity(line string) (*Identity, error) {
	f := strings.Fields(line)
	var id Identity
	switch {
	case len(f) == 4 && f[0] == schemeLinux:
		id = Identity{Scheme: schemeLinux, Boot: f[1], PidNS: f[2]}
	case len(f) == 3 && f[0] == schemeDarwin:
		id = Identity{Scheme: schemeDarwin, Boot: f[1]}
	default:
		return nil, fmt.Errorf("parse pid file: bad identity line %q", line)
	}
	start, err := strconv.ParseUint(f[len(f)-1], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("parse pid file: bad start time %q", f[len(f)-1])
	}
	id.Start = start
	return &id, nil
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
	if !sameProcess(rec.Identity, now) {
		return Stale
	}
	return Live
}

// sameProcess reports whether two identities name one process instance. A
// record written by another OS cannot name a process of this one.
func sameProcess(rec, now *Identity) bool {
	if rec.Scheme != now.Scheme || rec.Start != now.Start {
		return false
	}
	if rec.Scheme == schemeLinux {
		return rec.Boot == now.Boot && rec.PidNS == now.PidNS
	}
	return true // darwin-v1: the boot time moves with the clock (see the package comment)
}

// Remove deletes path only if it still records the current process.
func Remove(path string) {
	rec, err := Read(path)
	if err == nil && rec.Pid == os.Getpid() {
		_ = os.Remove(path)
	}
}
