package store

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	badger "github.com/dgraph-io/badger/v4"
)

// smallTables makes every 1 MiB of writes a level-0 table.
func smallTables(o badger.Options) badger.Options {
	return o.WithMemTableSize(1 << 20).WithValueThreshold(64 << 10).WithBaseTableSize(1 << 20)
}

// Without Badger's compactors, the store's own compaction keeps level 0
// below Badger's write stall: writes flush table after table, and the
// maintainer compacts them into the tree, and the data is all there.
func TestWritesAreCompacted(t *testing.T) {
	s, err := open(t.TempDir(), nil, smallTables, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	val := bytes.Repeat([]byte("x"), 4<<10)
	key := func(i int) string { return fmt.Sprintf("k/%08d", i) }
	n := 0
	write := func(count int) {
		t.Helper()
		if err := s.Update(func(txn *Txn) error {
			for range count {
				if err := txn.Set(key(n), val); err != nil {
					return err
				}
				n++
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	for range 250 { // 10 MiB: 10 memtables, below the write stall at 15
		write(10)
	}
	// Await the compaction: writes wake the maintainer.
	deadline := time.Now().Add(60 * time.Second)
	for s.maint.flattened.Load() == 0 || s.db.Levels()[0].NumTables >= compactL0Tables {
		if time.Now().After(deadline) {
			t.Fatalf("level 0 not compacted: %d tables, %d compactions", s.db.Levels()[0].NumTables, s.maint.flattened.Load())
		}
		write(1)
		time.Sleep(10 * time.Millisecond)
	}
	below := 0
	for _, l := range s.db.Levels()[1:] {
		below += l.NumTables
	}
	if below == 0 {
		t.Fatal("compaction reported but no table below level 0")
	}
	if err := s.View(func(txn *Txn) error {
		for _, i := range []int{0, n / 2, n - 1} {
			v, err := txn.Get(key(i))
			if err != nil {
				return fmt.Errorf("%s: %w", key(i), err)
			}
			if !bytes.Equal(v, val) {
				return fmt.Errorf("%s: wrong value", key(i))
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
