package store

import (
	"context"
	"sync/atomic"
	"time"

	badger "github.com/dgraph-io/badger/v4"
)

// Badger's own compactors each wake every 50 ms, written to or not: two of
// them were 40 ms of CPU per 10 s of an idle broker, most of its idle
// cost. The store opens Badger without them and keeps the LSM tree in
// shape itself, driven by its own writes: after a commit (at most once per
// compactCheckEvery) it looks at level 0 and, once it holds
// compactL0Tables tables (memtables flushed), compacts through
// DB.Flatten, well before Badger's write stall at 15. The value log is
// collected vlogGCEvery after the first write since the last collection.
// With no writes, nothing ticks.

const (
	compactCheckEvery = time.Second
	// compactL0Tables: compact once level 0 holds this many tables (Badger
	// compacts at 5 by default). Badger is opened with NumLevelZeroTables
	// one lower, so that Flatten compacts a tree that is all level 0.
	compactL0Tables = 4
	vlogGCEvery     = 5 * time.Minute
)

// maintainer runs the store's compaction and value-log collection.
type maintainer struct {
	db        *badger.DB
	wrote     chan struct{} // one pending signal: there were writes since the last check
	log       func(msg string, args ...any)
	flattened atomic.Int32 // compactions run (tests)
}

func newMaintainer(db *badger.DB, log func(string, ...any)) *maintainer {
	return &maintainer{db: db, wrote: make(chan struct{}, 1), log: log}
}

// written tells the maintainer that a commit happened; it never blocks.
func (m *maintainer) written() {
	select {
	case m.wrote <- struct{}{}:
	default:
	}
}

// run checks the tree after writes until ctx ends.
func (m *maintainer) run(ctx context.Context) {
	var gc <-chan time.Time // armed by the first write since the last collection
	for {
		select {
		case <-ctx.Done():
			return
		case <-gc:
			gc = nil
			for m.db.RunValueLogGC(0.5) == nil {
			}
			continue
		case <-m.wrote:
		}
		if gc == nil {
			gc = time.After(vlogGCEvery)
		}
		m.compactIfNeeded()
		select { // at most one check per compactCheckEvery
		case <-ctx.Done():
			return
		case <-time.After(compactCheckEvery):
		}
	}
}

// compactIfNeeded compacts once level 0 holds compactL0Tables tables.
func (m *maintainer) compactIfNeeded() {
	levels := m.db.Levels()
	if len(levels) == 0 || levels[0].NumTables < compactL0Tables {
		return
	}
	if err := m.db.Flatten(1); err != nil {
		m.log("compaction failed; retrying after the next write", "err", err)
		return
	}
	m.flattened.Add(1)
}
