// Package procinfo reads what intercom needs to know about another process
// by its pid: its command name, its parent, whether it is a zombie and when
// it started. Linux answers from /proc/<pid>/stat, macOS from the sysctl
// kern.proc.pid (struct kinfo_proc); each in its own file.
package procinfo

// Info describes one process.
type Info struct {
	Name   string // command name, as truncated by the kernel (15 bytes on Linux, 16 on macOS)
	Parent int    // parent pid
	Zombie bool   // exited, not yet reaped
	// Start is when the process started, in a unit fixed per OS: clock ticks
	// after boot on Linux (/proc stat field 22), microseconds since the Unix
	// epoch on macOS (kinfo_proc p_starttime). Equal values mean the same
	// process only when compared on the same machine and boot.
	Start uint64
}

// Alive reports whether pid names a running process (not a zombie).
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	in, err := Read(pid)
	return err == nil && !in.Zombie
}
