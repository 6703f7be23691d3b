package bounded

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/intercom-dev/intercom/internal/testenv"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	sparse := testenv.SparseFile(t, 10<<30)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, want string
		n          int
	}{
		{small, "", 5},
		{sparse, "x is 10737418240 bytes; max 1024", 0},
		{"/dev/zero", "x is over 1024 bytes", 0},
		{fifo, "", 0}, // no writer: empty, and opening does not block
		{dir, "x is a directory", 0},
	} {
		data, err := ReadFile(tc.path, "x", 1024)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: got error %v, want %d bytes", tc.path, err, tc.n)
		case tc.want == "" && len(data) != tc.n:
			t.Errorf("%s: got %d bytes, want %d", tc.path, len(data), tc.n)
		case tc.want != "" && (err == nil || err.Error() != tc.want):
			t.Errorf("%s: got error %v, want %q", tc.path, err, tc.want)
		}
	}
	if _, err := ReadFile(sparse, "x", 1024); !errors.Is(err, ErrTooLarge) {
		t.Errorf("got %v, want ErrTooLarge", err)
	}
}

func TestRead(t *testing.T) {
	if _, err := Read(strings.NewReader(strings.Repeat("a", 2000)), "stdin", 1024); err == nil || err.Error() != "stdin is over 1024 bytes" {
		t.Errorf("got %v", err)
	}
	zero, err := os.Open("/dev/zero")
	if err != nil {
		t.Fatal(err)
	}
	defer zero.Close()
	if _, err := Read(zero, "stdin", 1024); !errors.Is(err, ErrTooLarge) {
		t.Errorf("got %v, want ErrTooLarge", err)
	}
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, 1100), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := Read(f, "stdin", 1024); err == nil || err.Error() != "stdin is 1100 bytes; max 1024" {
		t.Errorf("got %v", err)
	}
	if data, err := Read(strings.NewReader("ok"), "stdin", 1024); err != nil || string(data) != "ok" {
		t.Errorf("got %q, %v", data, err)
	}
}

func TestTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(path, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		from, limit int64
		want        string
	}{
		{0, 100, "0123456789"},
		{4, 100, "456789"},
		{0, 3, "789"},
		{4, 3, "789"},
		{50, 100, "0123456789"}, // shorter than from: rotated, all of it
		{10, 100, ""},
	} {
		if got := string(Tail(path, tc.from, tc.limit)); got != tc.want {
			t.Errorf("Tail(from %d, limit %d) = %q, want %q", tc.from, tc.limit, got, tc.want)
		}
	}
	if got := Tail(filepath.Join(t.TempDir(), "missing"), 0, 10); len(got) != 0 {
		t.Errorf("Tail of a missing file = %q, want empty", got)
	}
}
