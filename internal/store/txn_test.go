package store

import (
	"errors"
	"testing"
	"time"
)

func TestTxnReadsWritesAndScans(t *testing.T) {
	t.Parallel()
	s, _ := openTemp(t)
	err := s.Update(func(txn *Txn) error {
		for _, k := range []string{"p/1", "p/2", "p/3", "q/1"} {
			if err := txn.Set(k, []byte("v"+k)); err != nil {
				return err
			}
		}
		return txn.SetTTL("ttl/1", []byte("x"), time.Hour)
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update(func(txn *Txn) error { return txn.Delete("p/2") })
	if err != nil {
		t.Fatal(err)
	}
	_ = s.View(func(txn *Txn) error {
		if v, err := txn.Get("p/1"); err != nil || string(v) != "vp/1" {
			t.Errorf("Get p/1 = %q, %v", v, err)
		}
		if _, err := txn.Get("p/2"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get deleted key: %v, want ErrNotFound", err)
		}
		if ok, err := txn.Has("ttl/1"); !ok || err != nil {
			t.Errorf("Has ttl/1 = %v, %v", ok, err)
		}
		if ok, err := txn.Has("nope"); ok || err != nil {
			t.Errorf("Has nope = %v, %v", ok, err)
		}
		var scanned []string
		if err := txn.Scan("p/", func(k string, v []byte) (bool, error) {
			scanned = append(scanned, k+"="+string(v))
			return true, nil
		}); err != nil || len(scanned) != 2 || scanned[0] != "p/1=vp/1" || scanned[1] != "p/3=vp/3" {
			t.Errorf("Scan p/ = %v, %v", scanned, err)
		}
		var first []string
		_ = txn.Scan("p/", func(k string, _ []byte) (bool, error) { first = append(first, k); return false, nil })
		if len(first) != 1 {
			t.Errorf("Scan stopping at once saw %v", first)
		}
		var keys []string
		txn.Keys("", func(k string) bool { keys = append(keys, k); return k != "p/3" })
		if len(keys) < 3 || keys[len(keys)-1] != "p/3" {
			t.Errorf("Keys until p/3 = %v", keys)
		}
		return nil
	})
}

func TestSequenceContinuesAfterReopen(t *testing.T) {
	t.Parallel()
	s, dir := openTemp(t)
	seq, err := NewSequence(s)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := seq.Next()
	b, _ := seq.Next()
	if a != 1 || b != 2 {
		t.Fatalf("first numbers %d, %d; want 1, 2", a, b)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	seq2, err := NewSequence(s2)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := seq2.Next(); err != nil || c <= b {
		t.Fatalf("after reopen Next = %d, %v; want more than %d", c, err, b)
	}
}
