// Package bounded reads input through a limit: a file, stdin or any reader
// is never read past max+1 bytes, whatever it is (a 10 GB file, /dev/zero,
// a FIFO, an endless pipe). A regular file that is too large is refused from
// its size before anything is read; otherwise the error says "over N bytes".
package bounded

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/intercom-dev/intercom/internal/plainfile"
)

// ErrTooLarge is wrapped by every TooLargeError.
var ErrTooLarge = errors.New("input too large")

// TooLargeError names an input over its limit.
type TooLargeError struct {
	What string // "--file big.log", "stdin", "config.json"
	Size int64  // its real size, or -1 when unknown (a pipe, a device)
	Max  int64
}

func (e *TooLargeError) Error() string {
	if e.Size >= 0 {
		return fmt.Sprintf("%s is %d bytes; max %d", e.What, e.Size, e.Max)
	}
	return fmt.Sprintf("%s is over %d bytes", e.What, e.Max)
}

func (e *TooLargeError) Unwrap() error { return ErrTooLarge }

// ReadFile reads at most max bytes of path. Opening does not block on a
// FIFO without a writer (it then reads as empty); a directory is an error.
func ReadFile(path, what string, max int64) ([]byte, error) {
	f, err := plainfile.Open(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readFile(f, what, max)
}

func readFile(f *os.File, what string, max int64) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := int64(-1)
	switch {
	case fi.IsDir():
		return nil, fmt.Errorf("%s is a directory", what)
	case fi.Mode().IsRegular():
		if fi.Size() > max {
			return nil, &TooLargeError{What: what, Size: fi.Size(), Max: max}
		}
		size = fi.Size()
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		if size <= max { // grew while read, or not a regular file
			size = -1
		}
		return nil, &TooLargeError{What: what, Size: size, Max: max}
	}
	return data, nil
}

// Read reads at most max bytes of r. When r is a regular file (stdin
// redirected from a file) its size is checked first.
func Read(r io.Reader, what string, max int64) ([]byte, error) {
	if f, ok := r.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			if off, err := f.Seek(0, io.SeekCurrent); err == nil && fi.Size()-off > max {
				return nil, &TooLargeError{What: what, Size: fi.Size() - off, Max: max}
			}
		}
	}
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, &TooLargeError{What: what, Size: -1, Max: max}
	}
	return data, nil
}

// Tail reads the end of path: from offset from (0 when the file is shorter
// than from, as after a rotation) to the end, but at most its last limit
// bytes. A file that cannot be read reads as empty.
func Tail(path string, from, limit int64) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	size := fi.Size()
	if size < from {
		from = 0
	}
	from = max(from, size-limit)
	buf := make([]byte, size-from)
	n, _ := f.ReadAt(buf, from)
	return buf[:n]
}
