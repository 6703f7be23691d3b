package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrUnavailable is wrapped by every error saying the store can no longer be
// written: its directory was deleted or replaced, made unwritable or
// read-only, or the disk answers with I/O errors. Once a Store has seen one,
// it refuses every later write with the same error (see Fail).
var ErrUnavailable = errors.New("store unavailable")

// dirIdentity is the device and inode of a directory.
type dirIdentity struct{ dev, ino uint64 }

func identityOf(dir string) (dirIdentity, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return dirIdentity{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return dirIdentity{}, nil
	}
	return dirIdentity{dev: uint64(st.Dev), ino: st.Ino}, nil
}

// Err returns the error that made the store unavailable, or nil.
func (s *Store) Err() error {
	if p := s.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// Fail marks the store unavailable with err (wrapped in ErrUnavailable if it
// is not already): every later write returns it at once. The first call
// wins and reports true.
func (s *Store) Fail(err error) bool {
	if !errors.Is(err, ErrUnavailable) {
		err = fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return s.failed.CompareAndSwap(nil, &err)
}

// checkDir verifies that the database directory is still the one opened:
// not deleted (a removed home) and not replaced by another directory.
func (s *Store) checkDir() error {
	id, err := identityOf(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: database directory %s was deleted while in use", ErrUnavailable, s.dir)
	}
	if err != nil {
		return fmt.Errorf("%w: database directory %s: %w", ErrUnavailable, s.dir, err)
	}
	if id != s.ident {
		return fmt.Errorf("%w: database directory %s was replaced while in use", ErrUnavailable, s.dir)
	}
	return nil
}

// Probe checks that the store can still be written: its directory is the one
// opened, and a small file can be created, written and synced in it (an
// unnamed O_TMPFILE where the filesystem has it, so nothing is left behind).
// It returns an error wrapping ErrUnavailable when not.
func (s *Store) Probe() error {
	if err := s.Err(); err != nil {
		return err
	}
	if err := s.checkDir(); err != nil {
		return err
	}
	// A full disk is not a failed store: writes are refused with no_space
	// until space returns (CheckSpace), and the broker stays up.
	if err := writeProbe(s.dir); err != nil && !errors.Is(err, syscall.ENOSPC) && !errors.Is(err, syscall.EDQUOT) {
		return fmt.Errorf("%w: cannot write in %s: %w", ErrUnavailable, s.dir, err)
	}
	return nil
}

// isUnavailable reports whether err means the store cannot be written (as
// opposed to a full disk, a conflict or a bad value): ErrUnavailable, or an
// I/O, permission, read-only or missing-file error from the filesystem.
func isUnavailable(err error) bool {
	if err == nil {
		return false
	}
	for _, target := range []error{ErrUnavailable, syscall.EIO, syscall.EROFS, syscall.EACCES, syscall.EPERM,
		syscall.ENOENT, syscall.ESTALE, syscall.ENODEV, syscall.ENXIO} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// writeProbe writes and fsyncs one byte in dir, removing what it created.
func writeProbe(dir string) error {
	fd, name, err := openProbe(dir)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), "probe")
	_, err = f.Write([]byte{'.'})
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if name != "" {
		if rerr := os.Remove(name); err == nil {
			err = rerr
		}
	}
	return err
}

func openNamedProbe(dir string) (int, string, error) {
	name := dir + "/.probe"
	fd, err := unix.Open(name, unix.O_CREAT|unix.O_TRUNC|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
	return fd, name, err
}
