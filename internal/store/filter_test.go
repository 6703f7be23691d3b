package store

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"
)

func awaitFilled(t *testing.T, s *Store) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !s.filter.ready.Load() {
		if time.Now().After(deadline) {
			t.Fatal("absence filter never filled")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestFilterKnowsStoredKeysAfterReopen: keys stored by an earlier run are
// found after a reopen (the filter is filled from the database), keys never
// written are answered absent without asking Badger, and keys written
// after the fill are found too.
func TestFilterKnowsStoredKeysAfterReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	old := []string{ackedKey("s1", "m1"), ackedKey("s1", "m2"), dedupeKey("s1", "c3")}
	if err := s.Update(func(txn *Txn) error {
		for _, k := range old {
			if err := txn.SetTTL(k, []byte("v"), time.Hour); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s, dir, nil)
	defer s.Close()
	awaitFilled(t, s)
	fresh := dedupeKey("s1", "c9")
	if err := s.Update(func(txn *Txn) error { return txn.Set(fresh, []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	_ = s.View(func(txn *Txn) error {
		for _, k := range append(old, fresh) {
			if v, err := txn.Get(k); err != nil || string(v) != "v" {
				t.Errorf("Get %s = %q, %v", k, v, err)
			}
		}
		absent := 0
		for i := range 1000 {
			k := dedupeKey("s1", fmt.Sprintf("never-%d", i))
			if _, err := txn.Get(k); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get %s: %v, want ErrNotFound", k, err)
			}
			if s.filter.absent(k) {
				absent++
			}
		}
		if absent < 990 {
			t.Errorf("the filter answered only %d of 1000 unknown keys itself", absent)
		}
		return nil
	})
}

// TestFilterNoFalseAbsence: while one goroutine commits keys, another
// reads every key whose commit returned: none is ever reported absent.
func TestFilterNoFalseAbsence(t *testing.T) {
	s, _ := openTemp(t)
	awaitFilled(t, s)
	committed := make(chan string, 64)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(committed)
		for i := range 500 {
			k := dedupeKey("s", fmt.Sprintf("c%d", i))
			if err := s.Update(func(txn *Txn) error { return txn.Set(k, []byte("x")) }); err != nil {
				t.Error(err)
				return
			}
			committed <- k
		}
	}()
	for k := range committed {
		if err := s.View(func(txn *Txn) error { _, err := txn.Get(k); return err }); err != nil {
			t.Fatalf("committed %s, then Get: %v", k, err)
		}
	}
	wg.Wait()
}

// BenchmarkFilterAbsent: the cost of answering a lookup of a key never
// written, with a million keys in the filter.
func BenchmarkFilterAbsent(b *testing.B) {
	f := newKeyFilter()
	for i := range 1_000_000 {
		f.add(dedupeKey("s", fmt.Sprintf("c%d", i)))
	}
	f.ready.Store(true)
	keys := make([]string, 4096)
	for i := range keys {
		keys[i] = ackedKey("s", fmt.Sprintf("m%020d", i))
	}
	b.ResetTimer()
	for i := range b.N {
		f.absent(keys[i%len(keys)])
	}
}
