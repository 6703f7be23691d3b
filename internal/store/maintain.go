package store

import (
	"context"
	"sync/atomic"
	"time"

	badger "github.com/dgraph-io/badger/v4"
)

// Badger compacts with its own compactors (they wake every 50 ms, written
// to or not: most of an idle broker's CPU). Opening Badger without them and
// compacting here alone (DB.Flatten once level 0 held compactL0Tables
// tables) cut that idle cost, but the long soak showed the broker's live
// heap grow from 26 to 88 MiB with it (38 MiB with Badger's compactors):
// memtables waited on a level 0 that was compacted too late. So Badger's
// compactors run again, and this is a backstop: after a commit (at most
// once per compactCheckEvery) it flattens a level 0 that still holds
// compactL0Tables tables. The value log is collected vlogGCEvery after the
// first write since the last collection.

const (
	compactCheckEvery = time.Second
	// compactL0Tables: flatten once level 0 holds this many tables.
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
