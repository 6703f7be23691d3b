package store

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"
)

func storedMessage(id string) []byte { return []byte(fmt.Sprintf(`{"id":%q,"text":"hi"}`, id)) }

// reopen closes s, runs between (nil for nothing) and opens dir again.
func reopen(t *testing.T, s *Store, dir string, between func()) *Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if between != nil {
		between()
	}
	s, err := Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestMessageIndexRebuiltAtOpen: the index is not stored, yet after a
// reopen it finds every stored inbox and outbox message by id, and none
// that was removed.
func TestMessageIndexRebuiltAtOpen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	in, out, gone := InboxKey("s1", 7), OutboxKey("h1", 8), InboxKey("s1", 9)
	if err := s.Update(func(txn *Txn) error {
		for id, key := range map[string]string{"m-in": in, "m-out": out, "m-gone": gone} {
			if err := txn.Set(key, storedMessage(id)); err != nil {
				return err
			}
			txn.IndexMessage(id, key)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(func(txn *Txn) error {
		txn.UnindexMessage("m-gone")
		return txn.Delete(gone)
	}); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s, dir, nil)
	defer s.Close()
	_ = s.View(func(txn *Txn) error {
		for id, want := range map[string]string{"m-in": in, "m-out": out} {
			if k, ok := txn.MessageKey(id); !ok || k != want {
				t.Errorf("MessageKey(%s) = %q, %v after reopen; want %q", id, k, ok, want)
			}
		}
		if k, ok := txn.MessageKey("m-gone"); ok {
			t.Errorf("removed message still indexed at %q", k)
		}
		return nil
	})
	if n := s.index.len(); n != 2 {
		t.Errorf("index holds %d ids, want 2", n)
	}
}

// TestMessageIndexChangesOnlyOnCommit: a transaction sees its own staged
// changes; others see them once it has committed, and never those of one
// that failed.
func TestMessageIndexChangesOnlyOnCommit(t *testing.T) {
	s, err := Open(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	seen := func(id string) bool {
		var ok bool
		_ = s.View(func(txn *Txn) error { _, ok = txn.MessageKey(id); return nil })
		return ok
	}
	if err := s.Update(func(txn *Txn) error {
		txn.IndexMessage("m1", InboxKey("s", 1))
		if k, ok := txn.MessageKey("m1"); !ok || k != InboxKey("s", 1) {
			t.Errorf("own staged change not seen: %q, %v", k, ok)
		}
		if seen("m1") {
			t.Error("another transaction saw a change before its commit")
		}
		return txn.Set(InboxKey("s", 1), storedMessage("m1"))
	}); err != nil {
		t.Fatal(err)
	}
	if !seen("m1") {
		t.Error("committed change not seen")
	}
	boom := errors.New("boom")
	if err := s.Update(func(txn *Txn) error {
		txn.UnindexMessage("m1")
		txn.IndexMessage("m2", InboxKey("s", 2))
		if _, ok := txn.MessageKey("m1"); ok {
			t.Error("own staged removal not seen")
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("Update = %v, want boom", err)
	}
	if !seen("m1") || seen("m2") {
		t.Errorf("a failed transaction changed the index: m1 %v, m2 %v", seen("m1"), seen("m2"))
	}
}

// TestFormat1IndexKeysDropped: a format 1 store's midx/ keys are dropped
// at Open, its messages are found through the rebuilt index, and it is
// marked with the current format.
func TestFormat1IndexKeysDropped(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	key := InboxKey("s1", 3)
	if err := s.Update(func(txn *Txn) error {
		if err := txn.Set(key, storedMessage("m3")); err != nil {
			return err
		}
		return txn.Set(legacyIndexPrefix+"m3", []byte(key))
	}); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s, dir, func() {
		if _, err := RewriteFormatMarker(dir, "1"); err != nil {
			t.Fatal(err)
		}
	})
	defer s.Close()
	_ = s.View(func(txn *Txn) error {
		if _, err := txn.Get(legacyIndexPrefix + "m3"); !errors.Is(err, ErrNotFound) {
			t.Errorf("format 1 index key still there: %v", err)
		}
		if k, ok := txn.MessageKey("m3"); !ok || k != key {
			t.Errorf("MessageKey(m3) = %q, %v; want %q", k, ok, key)
		}
		if v, err := txn.Get(FormatKey); err != nil || string(v) != fmt.Sprint(FormatVersion) {
			t.Errorf("format marker %q, %v; want %d", v, err, FormatVersion)
		}
		return nil
	})
}

// TestOpenVisitingHandsEachStoredMessageOnce: the scan that rebuilds the
// index hands every inbox and outbox entry, and nothing else, to visit.
func TestOpenVisitingHandsEachStoredMessageOnce(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{InboxKey("s1", 1): "m1", InboxKey("s2", 2): "m2", OutboxKey("h1", 3): "m3"}
	if err := s.Update(func(txn *Txn) error {
		for key, id := range want {
			if err := txn.Set(key, storedMessage(id)); err != nil {
				return err
			}
		}
		return txn.Set(SessionKey("s1"), []byte(`{"id":"s1"}`))
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	s, err = OpenVisiting(dir, slog.New(slog.DiscardHandler), func(key string, val []byte) {
		seen[key]++
		if string(val) != string(storedMessage(want[key])) {
			t.Errorf("visit %s: value %q", key, val)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if len(seen) != len(want) {
		t.Errorf("visited %v, want the %d stored messages", seen, len(want))
	}
	for key := range want {
		if seen[key] != 1 {
			t.Errorf("%s visited %d times, want once", key, seen[key])
		}
	}
}
