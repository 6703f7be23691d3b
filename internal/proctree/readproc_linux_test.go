package proctree

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
)

// readProc reads a /proc file whole, past its first buffer, and says
// which file it could not open.
func TestReadProc(t *testing.T) {
	for _, path := range []string{"/proc/self/stat", "/proc/self/maps", "/proc/self/cmdline"} {
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		got, err := readProc(path)
		if err != nil {
			t.Fatalf("readProc(%s): %v", path, err)
		}
		if path == "/proc/self/cmdline" && !bytes.Equal(got, want) { // stat's times and maps move between the reads
			t.Fatalf("readProc(%s) read %d bytes, os.ReadFile %d", path, len(got), len(want))
		}
		if len(got) == 0 {
			t.Fatalf("readProc(%s) read nothing", path)
		}
	}
	if m, _ := readProc("/proc/self/maps"); len(m) <= 1024 || m[len(m)-1] != '\n' {
		t.Fatalf("/proc/self/maps read as %d bytes (want more than the first buffer, ending in a line break)", len(m))
	}
	_, err := readProc("/proc/0/stat")
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "/proc/0/stat") {
		t.Fatalf("readProc of a missing file: %v, want a not-exist error naming it", err)
	}
}
