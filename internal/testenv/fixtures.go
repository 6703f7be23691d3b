package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// SparseFile creates a file of size bytes in a temporary directory of t
// that takes no disk space: the input a bounded reader must refuse without
// reading it.
func SparseFile(t testing.TB, size int64) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "sparse")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	return p
}
