package store

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
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
		v, err = txn.Get(formatKey)
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
			return txn.Delete(key)
		}
		return txn.Set(key, []byte(val))
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
	if got := marker(t, s); got != strconv.Itoa(FormatVersion) {
		t.Fatalf("new store format %q, want %d", got, FormatVersion)
	}
}

// A store from before the marker (format 1 without a key) opens, keeps its
// data and is marked with this build's format (migrated: its message key
// moved into the log).
func TestFormatUnmarkedStoreIsRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := openT(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	setKey(t, s, sessionKey("x"), "hello")
	setKey(t, s, inboxKey("x", 1), string(storedMessage("m1")))
	setKey(t, s, formatKey, "") // as written by a build without markers
	s.Close()
	if s, err = openT(t, dir); err != nil {
		t.Fatalf("reopen unmarked store: %v", err)
	}
	defer s.Close()
	if got := marker(t, s); got != strconv.Itoa(FormatVersion) {
		t.Fatalf("unmarked store format %q after open, want %d", got, FormatVersion)
	}
	var v []byte
	_ = s.View(func(txn *Txn) error { v, err = txn.Get(sessionKey("x")); return err })
	if string(v) != "hello" {
		t.Fatalf("data lost: %q, %v", v, err)
	}
	_ = s.View(func(txn *Txn) error {
		if m, err := txn.MessageAt(InboxSlot("x", 1)); err != nil || m.ID != "m1" {
			t.Errorf("migrated message: %+v, %v", m, err)
		}
		if has, _ := txn.Has(inboxKey("x", 1)); has {
			t.Error("format 1 message key still there after migration")
		}
		return nil
	})
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
	setKey(t, s, formatKey, "7")
	s.Close()
	_, err = openT(t, dir)
	if !errors.Is(err, ErrNewerFormat) || !strings.Contains(err.Error(), "format 7") || !strings.Contains(err.Error(), "reads up to "+strconv.Itoa(FormatVersion)) {
		t.Fatalf("open newer store: %v, want ErrNewerFormat naming both formats", err)
	}
	// Read as another version would: the refused store's marker is untouched.
	if old, err := RewriteFormatMarker(dir, "7"); err != nil || old != "7" {
		t.Errorf("refused store's marker changed to %q (%v)", old, err)
	}
}

func TestFormatGarbageMarkerRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := openT(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	setKey(t, s, formatKey, "x")
	s.Close()
	if _, err := openT(t, dir); err == nil || !strings.Contains(err.Error(), "unreadable format marker") {
		t.Fatalf("open store with garbage marker: %v", err)
	}
}

// RewriteFormatMarker removes and restores a marker as another version
// would, reporting what was there.
func TestRewriteFormatMarker(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := openT(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if old, err := RewriteFormatMarker(dir, ""); err != nil || old != strconv.Itoa(FormatVersion) {
		t.Fatalf("remove marker: was %q, %v; want %d", old, err, FormatVersion)
	}
	if old, err := RewriteFormatMarker(dir, "1"); err != nil || old != "" {
		t.Fatalf("set marker: was %q, %v; want none", old, err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := RewriteFormatMarker(filepath.Join(file, "db"), "1"); err == nil {
		t.Fatal("RewriteFormatMarker of a store dir under a file: no error")
	}
}
