package store

import (
	"errors"
	"log/slog"
	"time"

	badger "github.com/dgraph-io/badger/v4"
)

// Txn is a transaction on the store: its reads see one snapshot, and in
// Update its writes commit together or not at all. It is valid only inside
// the View or Update call that passed it.
type Txn struct {
	t   *badger.Txn
	f   *keyFilter             // the store's absence filter (filter.go), nil for none
	x   *msgIndex              // the store's message index (msgindex.go), nil for none
	idx map[string]indexChange // index changes staged by this transaction
	// the store's message log in memory (msglog.go), nil for none, and
	// this transaction's changes of it
	boxes *msgBoxes
	ml    *txnLog
	log   *slog.Logger // where unreadable values are reported, nil for the default
}

func (t *Txn) logger() *slog.Logger {
	if t.log == nil {
		return slog.Default()
	}
	return t.log
}

// The raw key-value calls below are for the store's own files (each
// concept's file builds its keys and encodes its values) and for measuring
// the store itself; everything else uses the typed methods of those files.

// Get returns the value of key, or ErrNotFound.
func (t *Txn) Get(key string) ([]byte, error) {
	if t.f.absent(key) {
		return nil, ErrNotFound
	}
	item, err := t.t.Get([]byte(key))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return item.ValueCopy(nil)
}

// Has reports whether key is present.
func (t *Txn) Has(key string) (bool, error) {
	if t.f.absent(key) {
		return false, nil
	}
	_, err := t.t.Get([]byte(key))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Set writes key.
func (t *Txn) Set(key string, val []byte) error {
	t.f.add(key)
	return t.t.Set([]byte(key), val)
}

// SetTTL writes key to expire after ttl.
func (t *Txn) SetTTL(key string, val []byte, ttl time.Duration) error {
	t.f.add(key)
	return t.t.SetEntry(badger.NewEntry([]byte(key), val).WithTTL(ttl))
}

// Delete removes key (absent or not).
func (t *Txn) Delete(key string) error { return t.t.Delete([]byte(key)) }

// Scan calls fn for every key with prefix, in key order, until fn returns
// false or an error.
func (t *Txn) Scan(prefix string, fn func(key string, val []byte) (bool, error)) error {
	opts := badger.DefaultIteratorOptions
	opts.Prefix = []byte(prefix)
	it := t.t.NewIterator(opts)
	defer it.Close()
	for it.Seek([]byte(prefix)); it.ValidForPrefix([]byte(prefix)); it.Next() {
		item := it.Item()
		val, err := item.ValueCopy(nil)
		if err != nil {
			return err
		}
		more, err := fn(string(item.Key()), val)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// Keys calls fn with each key under prefix, in order, without reading
// values, until fn returns false.
func (t *Txn) Keys(prefix string, fn func(key string) bool) {
	opts := badger.DefaultIteratorOptions
	opts.Prefix, opts.PrefetchValues = []byte(prefix), false
	it := t.t.NewIterator(opts)
	defer it.Close()
	for it.Seek([]byte(prefix)); it.ValidForPrefix([]byte(prefix)); it.Next() {
		if !fn(string(it.Item().Key())) {
			return
		}
	}
}
