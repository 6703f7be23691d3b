package store

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

func openTemp(t *testing.T) (*Store, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "db")
	s, err := Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if s.Err() == nil { // a failed store's Close may never return (Badger retries its flush)
			_ = s.Close()
		}
	})
	return s, dir
}

func put(s *Store, k string) error {
	return s.Update(func(txn *Txn) error { return txn.Set(k, []byte("v")) })
}

// TestProbeHealthy: a healthy store passes its probe and leaves no file.
func TestProbeHealthy(t *testing.T) {
	s, dir := openTemp(t)
	before, _ := os.ReadDir(dir)
	for range 3 {
		if err := s.Probe(); err != nil {
			t.Fatalf("probe of a healthy store: %v", err)
		}
	}
	after, _ := os.ReadDir(dir)
	if len(after) != len(before) {
		t.Fatalf("probe left files: %d entries before, %d after", len(before), len(after))
	}
}

// TestDeletedDirFailsWrites: once the database directory is deleted, the
// next commit is not reported done, the store is marked unavailable, the
// probe says so, and every later write fails at once with the same error.
func TestDeletedDirFailsWrites(t *testing.T) {
	s, dir := openTemp(t)
	if err := put(s, "a"); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	err := put(s, "b")
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("commit into a deleted directory: %v, want ErrUnavailable", err)
	}
	if s.Err() == nil || !errors.Is(s.Probe(), ErrUnavailable) || !errors.Is(put(s, "c"), ErrUnavailable) {
		t.Fatalf("after the failure: Err %v, Probe %v; want both unavailable", s.Err(), s.Probe())
	}
}

// TestReplacedDirDetected: a directory put in the place of the one opened
// (a home deleted and re-created) is noticed by the probe.
func TestReplacedDirDetected(t *testing.T) {
	s, dir := openTemp(t)
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := s.Probe(); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("probe of a replaced directory: %v, want ErrUnavailable", err)
	}
}
