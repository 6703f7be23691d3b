package store

import (
	"errors"
	"strings"
	"testing"

	badger "github.com/dgraph-io/badger/v4"
)

func openT(t *testing.T, dir string) (*Store, error) {
	t.Helper()
	return Open(dir, nil)
}

func marker(t *testing.T, s *Store) string {
	t.Helper()
	var v []byte
	if err := s.View(func(txn *Txn) error {
		var err error
		v, err = Get(txn, FormatKey)
		return err
	}); err != nil {
		t.Fatalf("read marker: %v", err)
	}
	return string(v)
}

func setKey(t *testing.T, s *Store, key, val string) {
	t.Helper()
	if err := s.Update(func(txn *Txn) error {
		if val == "" {
			return txn.Delete([]byte(key))
		}
		return txn.Set([]byte(key), []byte(val))
	}); err != nil {
		t.Fatal(err)
	}
}

// A new store is marked with this build's format.
func TestFormatMarkedOnCreate(t *testing.T) {
	t.Parallel()
	s, err := openT(t, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := marker(t, s); got != "1" {
		t.Fatalf("new store format %q, want 1", got)
	}
}

// A store from before the marker (format 1 without a key) opens, keeps its
// data and gets the marker.
func TestFormatUnmarkedStoreIsRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := openT(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	setKey(t, s, "inbox/x/1", "hello")
	setKey(t, s, FormatKey, "") // as written by a build without markers
	s.Close()
	if s, err = openT(t, dir); err != nil {
		t.Fatalf("reopen unmarked store: %v", err)
	}
	defer s.Close()
	if got := marker(t, s); got != "1" {
		t.Fatalf("unmarked store format %q after open, want 1", got)
	}
	var v []byte
	_ = s.View(func(txn *Txn) error { v, err = Get(txn, "inbox/x/1"); return err })
	if string(v) != "hello" {
		t.Fatalf("data lost: %q, %v", v, err)
	}
}

// A store written by a newer intercom is refused with a clear error, and
// nothing in it changes.
func TestFormatNewerStoreRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := openT(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	setKey(t, s, FormatKey, "7")
	s.Close()
	_, err = openT(t, dir)
	if !errors.Is(err, ErrNewerFormat) || !strings.Contains(err.Error(), "format 7") || !strings.Contains(err.Error(), "reads up to 1") {
		t.Fatalf("open newer store: %v, want ErrNewerFormat naming both formats", err)
	}
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.View(func(txn *badger.Txn) error {
		v, err := Get(txn, FormatKey)
		if string(v) != "7" {
			t.Errorf("refused store's marker changed to %q (%v)", v, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func TestFormatGarbageMarkerRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := openT(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	setKey(t, s, FormatKey, "x")
	s.Close()
	if _, err := openT(t, dir); err == nil || !strings.Contains(err.Error(), "unreadable format marker") {
		t.Fatalf("open store with garbage marker: %v", err)
	}
}
