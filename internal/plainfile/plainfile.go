//go:build unix

// Package plainfile opens files as os.OpenFile does, but a regular file is
// not offered to the runtime's network poller. On Linux os.OpenFile tries
// every file it opens: it sets the descriptor non-blocking, starts the
// poller on first use (an epoll instance and its event descriptor), is
// refused it for a regular file and sets it blocking again, five system
// calls and more for the first. A hook process opens a few small files at
// every tool call (its config, its binding and their locks) and needs no
// poller otherwise (its socket is internal/unixsock).
package plainfile

import (
	"io"
	"os"
	"syscall"
)

// Open opens path with flag and perm as os.OpenFile does. A regular file
// is returned blocking (O_NONBLOCK, which means nothing for one, is
// cleared) and off the poller; anything else (a FIFO opened O_NONBLOCK,
// say) is made a file as os.NewFile makes it, on the poller when
// non-blocking, as os.OpenFile would.
func Open(path string, flag int, perm os.FileMode) (*os.File, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, flag|syscall.O_CLOEXEC, uint32(perm.Perm()))
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	if flag&syscall.O_NONBLOCK != 0 {
		var st syscall.Stat_t
		if syscall.Fstat(fd, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFREG {
			_ = syscall.SetNonblock(fd, false)
		}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// ReadFile reads the file at path whole, as os.ReadFile does.
func ReadFile(path string) ([]byte, error) {
	f, err := Open(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
