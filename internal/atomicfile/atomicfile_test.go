package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileReplacesWholeWithModeAndLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	for _, tc := range []struct {
		data string
		perm os.FileMode
	}{
		{"first", 0o600},
		{"second, longer than the first", 0o644},
		{"", 0o600},
	} {
		if err := WriteFile(path, []byte(tc.data), tc.perm); err != nil {
			t.Fatalf("WriteFile(%q): %v", tc.data, err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != tc.data {
			t.Fatalf("read back %q (%v), want %q", got, err, tc.data)
		}
		if fi, _ := os.Stat(path); fi.Mode().Perm() != tc.perm {
			t.Fatalf("mode %v, want %v", fi.Mode().Perm(), tc.perm)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("directory holds %d entries, want only the file: %v", len(ents), ents)
	}
}

func TestWriteFileIntoMissingDirectoryFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "f")
	if err := WriteFile(path, []byte("x"), 0o600); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("WriteFile into a missing directory: %v, want ErrNotExist", err)
	}
}

func TestCreateFileRefusesAnExistingFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "answer.json")
	if err := CreateFile(path, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := CreateFile(path, []byte("two"), 0o600); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second CreateFile: %v, want ErrExist", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "one" {
		t.Fatalf("content %q after a refused create, want the first", got)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("directory holds %d entries, want only the file", len(ents))
	}
}
