package store

import (
	"log/slog"
	"testing"
)

// TestSequenceSurvivesReopen: numbers strictly increase, within a lease,
// across a new lease and after a reopen (which starts past the lease).
func TestSequenceSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	seq, err := NewSequence(s)
	if err != nil {
		t.Fatal(err)
	}
	var last uint64
	for i := 0; i < seqLease+5; i++ { // crosses into a second lease
		n, err := seq.Next()
		if err != nil {
			t.Fatal(err)
		}
		if n <= last {
			t.Fatalf("Next = %d after %d", n, last)
		}
		last = n
	}
	s = reopen(t, s, dir, nil)
	defer s.Close()
	seq, err = NewSequence(s)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := seq.Next(); err != nil || n <= last {
		t.Fatalf("after reopen Next = %d, %v; want > %d", n, err, last)
	}
}
