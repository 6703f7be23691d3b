// Package store is intercom's durable state: a Badger v4 database opened with
// synchronous writes, so a committed transaction is on disk; the committer
// that batches the broker's writes into one fsync'd transaction (group
// commit); and, one file per stored concept, the typed reads and writes of
// each (messages.go, sessions.go, topics.go, dedupe.go, traces.go,
// hosts.go, seq.go), which hold its keys, its encoding and its indexes
// (the layout of every key: keys.go). It is the only package that speaks
// to Badger or knows a key: everything else reads and writes through the
// methods of Txn.
package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// ErrNotFound is returned when what is asked for is not stored.
var ErrNotFound = errors.New("not found")

// ErrUnreadable is returned for a stored value that does not decode.
var ErrUnreadable = errors.New("unreadable stored value")

// ErrTxnTooBig is returned by a commit that holds more than Badger takes in
// one transaction.
var ErrTxnTooBig = badger.ErrTxnTooBig

// errConflict: a concurrent transaction wrote a key this one read.
var errConflict = badger.ErrConflict

// Store wraps a Badger database.
type Store struct {
	db     *badger.DB
	dir    string
	log    *slog.Logger
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
	ident  dirIdentity           // the directory opened, to notice it deleted or replaced
	failed atomic.Pointer[error] // set once the store is unavailable (see Fail)
	filter *keyFilter            // keys it may hold under the probed prefixes (filter.go)
	index  *msgIndex             // where each stored message is, by id (msgindex.go)
	boxes  *msgBoxes             // the message log's layout in memory (msglog.go)
	maint  *maintainer           // compaction and value-log collection (maintain.go)
	wrote  chan struct{}         // one pending signal after commits (Written)
	space  spaceCheck            // the last free-space reading (CheckSpace)
}

// Open opens (creating if needed) the database in dir.
func Open(dir string, log *slog.Logger) (*Store, error) {
	return open(dir, log, nil, nil)
}

// OpenVisiting opens the database in dir like Open and hands every stored
// message (each inbox and outbox entry: its slot and the message, decoded
// once) to visit, during the one scan that builds the message index, so
// that a caller building its own view of them at start (the broker's
// ledger) does not read them a second time.
func OpenVisiting(dir string, log *slog.Logger, visit func(Slot, *wire.Message)) (*Store, error) {
	return open(dir, log, nil, visit)
}

// ValueLogFrom: a value of this many bytes or more (a busy broker's
// history chunk, a large commit's message log entry) is written once to
// Badger's value log, and the tree holds a pointer to it, instead of being
// copied through the memtable, its flush and every compaction (a history
// chunk lives for weeks). maintain.go collects the value log of what
// expired or was deleted.
const ValueLogFrom = 64 << 10

// open opens the database in dir with the broker's options, changed by
// tune when not nil (tests), handing each stored message to visit when not
// nil (OpenVisiting).
func open(dir string, log *slog.Logger, tune func(badger.Options) badger.Options, visit func(Slot, *wire.Message)) (*Store, error) {
	if log == nil {
		log = slog.Default()
	}
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return nil, fmt.Errorf("open store %s: exists and is not a directory (refusing to touch it)", dir)
	}
	opts := badger.DefaultOptions(dir).
		WithSyncWrites(true).
		WithLogger(badgerLogger{log.With("component", "badger")}).
		WithNumVersionsToKeep(1).
		WithMemTableSize(16 << 20).
		WithValueLogFileSize(64 << 20).
		WithCompactL0OnClose(true).
		WithNumCompactors(0). // the store compacts (maintain.go)
		WithNumLevelZeroTables(compactL0Tables - 1).
		WithBlockCacheSize(16 << 20).
		WithValueThreshold(ValueLogFrom)
	if tune != nil {
		opts = tune(opts)
	}
	db, err := badger.Open(opts)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	ident, err := identityOf(dir)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Store{db: db, dir: dir, log: log, cancel: cancel, ident: ident, filter: newKeyFilter(), index: newMsgIndex(), boxes: newMsgBoxes(), wrote: make(chan struct{}, 1)}
	s.maint = newMaintainer(db, log.Warn)
	if err := s.checkFormat(); err != nil {
		cancel()
		db.Close()
		return nil, err
	}
	if err := s.loadMessages(visit); err != nil {
		cancel()
		db.Close()
		return nil, fmt.Errorf("open store %s: index stored messages: %w", dir, err)
	}
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		s.maint.run(ctx)
	}()
	go func() {
		defer s.wg.Done()
		if err := s.filter.fill(ctx, s.db); err != nil && ctx.Err() == nil {
			log.Warn("absence filter not filled; every lookup asks the database", "err", err)
		}
	}()
	return s, nil
}

// Update runs fn in a read-write transaction and commits it durably. A
// commit is reported done only if the database directory is still the one
// opened afterwards: a commit into a deleted home is not durable. Any error
// saying the store cannot be written marks it unavailable (Fail), and every
// later Update returns that error at once.
func (s *Store) Update(fn func(*Txn) error) error {
	if err := s.Err(); err != nil {
		return err
	}
	var txn *Txn
	err := s.db.Update(func(t *badger.Txn) error {
		txn = &Txn{t: t, f: s.filter, x: s.index, boxes: s.boxes, log: s.log}
		if err := fn(txn); err != nil {
			return err
		}
		return txn.flushLog()
	})
	if err == nil {
		s.boxes.apply(txn.ml)
		s.index.apply(txn.idx)
		s.maint.written()
		select {
		case s.wrote <- struct{}{}:
		default:
		}
		err = s.checkDir()
	}
	if isUnavailable(err) {
		s.Fail(err)
		return s.Err()
	}
	return err
}

// Written receives after commits (one signal pending at most): what
// watches the store can rest while nothing is written.
func (s *Store) Written() <-chan struct{} { return s.wrote }

// MinFreeBytes is the free space CheckSpace demands before a write. Badger
// writes its memtable WAL (and large values) through mmap'd, sparsely
// truncated files: on a full filesystem the page fault of such a write is
// not an ENOSPC error but a SIGBUS that kills the process. Refusing writes
// while less than this headroom is free keeps the broker alive and lets it
// answer no_space instead; once space returns, writes work again.
const MinFreeBytes = 8 << 20

// CheckSpace returns an error wrapping syscall.ENOSPC when the filesystem of
// the store has less than MinFreeBytes plus twice need (a value can land in
// the write-ahead log and in the value log) available. It is a preflight,
// not a reservation: another process can still take the space after it.
//
// A statfs is a system call per batch, so while the last one is under
// spaceTrustFor old and found more than spaceTrustAbove free beyond what
// the batches since then could have written, it stands for a new one.
func (s *Store) CheckSpace(need int64) error {
	want := uint64(MinFreeBytes + 2*max(need, 0))
	sp := &s.space
	sp.mu.Lock()
	if !sp.at.IsZero() && time.Since(sp.at) < spaceTrustFor && sp.free >= spaceTrustAbove+sp.since+want {
		sp.since += want - MinFreeBytes
		sp.mu.Unlock()
		return nil
	}
	sp.mu.Unlock()
	var st syscall.Statfs_t
	if err := syscall.Statfs(s.dir, &st); err != nil {
		return nil // cannot tell: let the write itself decide
	}
	free := st.Bavail * uint64(st.Bsize)
	sp.mu.Lock()
	sp.at, sp.free, sp.since = time.Now(), free, want-MinFreeBytes
	sp.mu.Unlock()
	if free < want {
		return fmt.Errorf("store %s: %d bytes free, below the %d kept in reserve for this write: %w", s.dir, free, want, syscall.ENOSPC)
	}
	return nil
}

// The last statfs of CheckSpace, trusted for spaceTrustFor while it found
// more than spaceTrustAbove free.
const (
	spaceTrustFor   = 10 * time.Millisecond
	spaceTrustAbove = 1 << 30
)

type spaceCheck struct {
	mu    sync.Mutex
	at    time.Time // of the last statfs
	free  uint64    // what it found available
	since uint64    // what the writes checked since could take
}

// View runs fn in a read-only transaction.
func (s *Store) View(fn func(*Txn) error) error {
	return s.db.View(func(t *badger.Txn) error {
		return fn(&Txn{t: t, f: s.filter, x: s.index, boxes: s.boxes, log: s.log})
	})
}

// Close stops background work and closes the database. It is idempotent.
func (s *Store) Close() error {
	var err error
	s.once.Do(func() {
		s.cancel()
		s.wg.Wait()
		err = s.db.Close()
	})
	return err
}

type badgerLogger struct{ l *slog.Logger }

func (b badgerLogger) msg(format string, args ...any) string {
	return strings.TrimSpace(fmt.Sprintf(format, args...))
}
func (b badgerLogger) Errorf(f string, a ...any)   { b.l.Error(b.msg(f, a...)) }
func (b badgerLogger) Warningf(f string, a ...any) { b.l.Warn(b.msg(f, a...)) }
func (b badgerLogger) Infof(f string, a ...any)    { b.debug(f, a...) }
func (b badgerLogger) Debugf(f string, a ...any)   { b.debug(f, a...) }

// debug formats only when debug logging is on: Badger logs on its write
// path, and formatting each line for nothing showed in the profile.
func (b badgerLogger) debug(f string, a ...any) {
	if b.l.Enabled(context.Background(), slog.LevelDebug) {
		b.l.Debug(b.msg(f, a...))
	}
}
