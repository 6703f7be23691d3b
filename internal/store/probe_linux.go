//go:build linux

package store

import (
	"errors"

	"golang.org/x/sys/unix"
)

// openProbe opens an unnamed O_TMPFILE in dir where the filesystem has it
// (nothing to clean up), else a named file; name is "" for the unnamed one.
func openProbe(dir string) (fd int, name string, err error) {
	fd, err = unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EINVAL) {
		return openNamedProbe(dir)
	}
	return fd, "", err
}
