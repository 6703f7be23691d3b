package pidfile

import (
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/intercom-dev/intercom/internal/procinfo"
)

// Self returns the identity of pid: the start time the kernel stored when
// the process forked (sysctl kern.proc.pid), and the boot time (sysctl
// kern.boottime) for people reading the file.
func Self(pid int) (*Identity, error) {
	boot, err := unix.SysctlTimeval("kern.boottime")
	if err != nil {
		return nil, fmt.Errorf("read boot time: %w", err)
	}
	in, err := procinfo.Read(pid)
	if err != nil {
		return nil, err
	}
	return &Identity{Scheme: schemeDarwin, Boot: strconv.FormatInt(boot.Sec, 10), Start: in.Start}, nil
}
