//go:build unix

package plainfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Open creates, writes and reads back as os.OpenFile does, refuses as it
// does (a missing file, O_EXCL on an existing one), and leaves a regular
// file blocking even when opened O_NONBLOCK.
func TestOpenAndReadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	f, err := Open(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("hello"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("created %v %v, want mode 0600", fi, err)
	}
	if data, err := ReadFile(path); err != nil || string(data) != "hello" {
		t.Fatalf("ReadFile: %q %v", data, err)
	}
	if _, err := Open(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("O_EXCL on an existing file: %v", err)
	}
	var pe *fs.PathError
	if _, err := ReadFile(path + ".none"); !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) || pe.Path != path+".none" {
		t.Fatalf("ReadFile of a missing file: %v", err)
	}
	f, err = Open(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	raw, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags int
	_ = raw.Control(func(fd uintptr) { flags, _, _ = fcntl(int(fd)) })
	if flags&syscall.O_NONBLOCK != 0 {
		t.Fatal("a regular file opened O_NONBLOCK stayed non-blocking")
	}
}

func fcntl(fd int) (int, int, error) {
	r, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFL, 0)
	if e != 0 {
		return 0, 0, e
	}
	return int(r), 0, nil
}
