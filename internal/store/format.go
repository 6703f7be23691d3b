package store

import (
	"errors"
	"fmt"
	"strconv"

	badger "github.com/dgraph-io/badger/v4"
)

// FormatVersion is the layout of keys and values this build reads and
// writes. Raise it when a change would be misread by an older broker; an
// older store is then migrated in checkFormat before anything reads it.
//
//	1  the first layout (stores without a marker are format 1)
//	2  no midx/<message id> keys: the message index is kept in memory
//	   (msgindex.go); format 1's index keys are dropped
//	3  the message log (msglog.go): one mlog/ entry per commit and ack
//	   records instead of an inbox/ or outbox/ key per message; older
//	   stores' inbox and outbox keys are moved into log entries
const FormatVersion = 3

// legacyIndexPrefix held format 1's message index keys.
const legacyIndexPrefix = "midx/"

// ErrNewerFormat is returned by Open for a store written by a newer
// intercom than this one.
var ErrNewerFormat = errors.New("store written by a newer intercom")

// checkFormat reads the store's format version: a newer one than this build
// knows is refused (nothing is written); an older one (an absent marker is
// format 1) is migrated and marked FormatVersion.
func (s *Store) checkFormat() error {
	var v []byte
	err := s.View(func(txn *Txn) error {
		var err error
		v, err = txn.Get(formatKey)
		return err
	})
	n := 1
	switch {
	case errors.Is(err, ErrNotFound):
	case err != nil:
		return fmt.Errorf("read store format: %w", err)
	default:
		if n, err = strconv.Atoi(string(v)); err != nil || n < 1 {
			return fmt.Errorf("store %s: unreadable format marker %q under %s", s.dir, v, formatKey)
		}
	}
	if n > FormatVersion {
		return fmt.Errorf("store %s has format %d, this intercom reads up to %d: %w; run the intercom that wrote it (or a later one), or set INTERCOM_HOME to another directory", s.dir, n, FormatVersion, ErrNewerFormat)
	}
	if n == FormatVersion {
		return nil
	}
	// From format 1: the index keys go (the index is rebuilt from the
	// messages at every Open). From 1 or 2: each inbox and outbox key moves
	// into the message log. Both before the marker is written, so an
	// interrupted migration is run again.
	if err := s.db.DropPrefix([]byte(legacyIndexPrefix)); err != nil {
		return fmt.Errorf("store %s: migrate from format %d: %w", s.dir, n, err)
	}
	if err := s.migrateBoxes(); err != nil {
		return fmt.Errorf("store %s: migrate from format %d: move messages into the log: %w", s.dir, n, err)
	}
	return s.Update(func(txn *Txn) error {
		return txn.Set(formatKey, []byte(strconv.Itoa(FormatVersion)))
	})
}

// RewriteFormatMarker opens the database in dir without checking its
// format, as an intercom of another version would, sets its format marker
// to val (or removes it when val is ""), closes it and returns what the
// marker was. It is for migrations and for tests that play another
// version; no broker may have the store open.
func RewriteFormatMarker(dir, val string) (string, error) {
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		return "", fmt.Errorf("open store %s: %w", dir, err)
	}
	var old []byte
	err = db.Update(func(t *badger.Txn) error {
		txn := &Txn{t: t}
		var err error
		if old, err = txn.Get(formatKey); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		if val == "" {
			return txn.Delete(formatKey)
		}
		return txn.Set(formatKey, []byte(val))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("rewrite format marker in %s: %w", dir, err)
	}
	return string(old), nil
}
