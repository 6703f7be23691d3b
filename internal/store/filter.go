package store

import (
	"context"
	"hash/maphash"
	"strings"
	"sync/atomic"

	badger "github.com/dgraph-io/badger/v4"
)

// The absence filter: a send asks the store whether it knows the client
// message id or an ack of the message id (dedupe and acked keys; where a
// message id is stored, the message index answers from memory), and for a
// new message the answer is always no — a miss that costs
// Badger a search of every memtable and level. The store therefore keeps a
// Bloom filter of every key under those prefixes it may hold: filled from
// the database in the background after Open, and added to by every write
// (before its commit). A key the filter has never seen is absent, and Get
// says so without asking Badger; until the filter is filled, or for a key
// it may have seen, Get asks Badger as before. A deleted or expired key
// stays in the filter: that only costs a real lookup.
//
// The bits are set and read atomically: a write on the committer and a
// lookup on a request handler need no lock (Badger's own Bloom filters are
// per table and not for concurrent writers).

// probedPrefixes are the key families the filter covers.
var probedPrefixes = []string{ackedPrefix, dedupePrefix}

// The filter is blocked: each key sets filterHashes bits of one 64-bit
// word, so a lookup touches one cache line (about 3% false positives at a
// million keys in 1 MiB).
const (
	filterWords  = 1 << 17 // 1 MiB
	filterHashes = 4
)

type keyFilter struct {
	seed  maphash.Seed
	words []atomic.Uint64
	ready atomic.Bool // filled from the database: absence can be trusted
}

func newKeyFilter() *keyFilter {
	return &keyFilter{seed: maphash.MakeSeed(), words: make([]atomic.Uint64, filterWords)}
}

func probed(key string) bool {
	for _, p := range probedPrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// slot returns the word of key and the bits it sets there: the word from
// the hash's low bits, each bit from six of its high ones.
func (f *keyFilter) slot(key string) (*atomic.Uint64, uint64) {
	h := maphash.String(f.seed, key)
	var mask uint64
	for i := range filterHashes {
		mask |= 1 << ((h >> (40 + 6*i)) & 63)
	}
	return &f.words[h&(filterWords-1)], mask
}

// add records that the store may hold key.
func (f *keyFilter) add(key string) {
	if f == nil || !probed(key) {
		return
	}
	if w, mask := f.slot(key); w.Load()&mask != mask {
		w.Or(mask)
	}
}

// absent reports whether the store certainly does not hold key.
func (f *keyFilter) absent(key string) bool {
	if f == nil || !f.ready.Load() || !probed(key) {
		return false
	}
	w, mask := f.slot(key)
	return w.Load()&mask != mask
}

// fill adds every stored key under the probed prefixes and then trusts
// the filter; it gives up (leaving it untrusted) when ctx ends.
func (f *keyFilter) fill(ctx context.Context, db *badger.DB) error {
	err := db.View(func(t *badger.Txn) error {
		for _, p := range probedPrefixes {
			opts := badger.DefaultIteratorOptions
			opts.Prefix, opts.PrefetchValues = []byte(p), false
			it := t.NewIterator(opts)
			n := 0
			for it.Seek([]byte(p)); it.ValidForPrefix([]byte(p)); it.Next() {
				if n++; n%1024 == 0 && ctx.Err() != nil {
					it.Close()
					return ctx.Err()
				}
				f.add(string(it.Item().Key()))
			}
			it.Close()
		}
		return nil
	})
	if err == nil {
		f.ready.Store(true)
	}
	return err
}
