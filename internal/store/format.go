package store

import (
	"errors"
	"fmt"
	"strconv"
)

// FormatVersion is the layout of keys and values this build reads and
// writes. Raise it when a change would be misread by an older broker; an
// older store is then migrated in checkFormat before anything reads it.
const FormatVersion = 1

// FormatKey holds the store's format version as a decimal string. Stores
// written before the key existed carry none: their layout is format 1.
const FormatKey = "meta/format"

// ErrNewerFormat is returned by Open for a store written by a newer
// intercom than this one.
var ErrNewerFormat = errors.New("store written by a newer intercom")

// checkFormat reads the store's format version: a newer one than this build
// knows is refused (nothing is written); an absent one is recorded as
// FormatVersion, which is what every store without a marker is.
func (s *Store) checkFormat() error {
	var v []byte
	err := s.View(func(txn *Txn) error {
		var err error
		v, err = Get(txn, FormatKey)
		return err
	})
	switch {
	case errors.Is(err, ErrNotFound):
		return s.Update(func(txn *Txn) error {
			return txn.Set([]byte(FormatKey), []byte(strconv.Itoa(FormatVersion)))
		})
	case err != nil:
		return fmt.Errorf("read store format: %w", err)
	}
	n, err := strconv.Atoi(string(v))
	if err != nil || n < 1 {
		return fmt.Errorf("store %s: unreadable format marker %q under %s", s.dir, v, FormatKey)
	}
	if n > FormatVersion {
		return fmt.Errorf("store %s has format %d, this intercom reads up to %d: %w; run the intercom that wrote it (or a later one), or set INTERCOM_HOME to another directory", s.dir, n, FormatVersion, ErrNewerFormat)
	}
	return nil
}
