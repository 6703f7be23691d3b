package store

import (
	"encoding/binary"
	"errors"

	badger "github.com/dgraph-io/badger/v4"
)

// entryValue is the value of one log entry with where each record starts,
// so that reading record i does not parse the ones before it. It is never
// changed once made.
type entryValue struct {
	v    []byte
	offs []int
}

func newEntryValue(v []byte) *entryValue {
	e := &entryValue{v: v}
	for off := 0; off < len(v); {
		e.offs = append(e.offs, off)
		next, ok := skipRecord(v, off)
		if !ok {
			break
		}
		off = next
	}
	return e
}

// skipRecord returns where the record at off ends.
func skipRecord(v []byte, off int) (int, bool) {
	for range 2 { // the slot's name, then the message
		l, n := binary.Uvarint(v[off:])
		if n <= 0 || uint64(len(v)-off-n) < l {
			return 0, false
		}
		off += n + int(l)
	}
	return off, true
}

// record returns a copy of the message of record i.
func (e *entryValue) record(i int) ([]byte, bool) {
	if i < 0 || i >= len(e.offs) {
		return nil, false
	}
	off := e.offs[i]
	kl, n := binary.Uvarint(e.v[off:])
	if n <= 0 {
		return nil, false
	}
	off += n + int(kl)
	if off > len(e.v) {
		return nil, false
	}
	dl, n := binary.Uvarint(e.v[off:])
	if n <= 0 || uint64(len(e.v)-off-n) < dl {
		return nil, false
	}
	return append([]byte(nil), e.v[off+n:off+n+int(dl)]...), true
}

func (x *msgBoxes) cached(n uint64) *entryValue {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.cache[n]
}

func (x *msgBoxes) remember(n uint64, e *entryValue) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.rememberLocked(n, e)
}

func (x *msgBoxes) rememberLocked(n uint64, e *entryValue) {
	if _, ok := x.cache[n]; ok || len(e.v) > logCacheBytes/4 {
		return
	}
	x.cache[n] = e
	x.cacheOrder = append(x.cacheOrder, n)
	x.cacheSize += len(e.v)
	for x.cacheSize > logCacheBytes && len(x.cacheOrder) > 0 {
		x.forgetLocked(x.cacheOrder[0])
		x.cacheOrder = x.cacheOrder[1:]
	}
	if len(x.cacheOrder) > 64 && cap(x.cacheOrder) > 4*len(x.cacheOrder) {
		x.cacheOrder = append([]uint64(nil), x.cacheOrder...)
	}
}

// forgetLocked drops entry n's value from the cache (its place in
// cacheOrder stays until it comes first).
func (x *msgBoxes) forgetLocked(n uint64) {
	if e, ok := x.cache[n]; ok {
		x.cacheSize -= len(e.v)
		delete(x.cache, n)
	}
}

// logEntry returns the value of log entry n, from the cache or else from
// Badger (then cached); ErrNotFound when it is gone, or newer than this
// transaction's snapshot.
func (t *Txn) logEntry(n uint64) (*entryValue, error) {
	if e := t.boxes.cached(n); e != nil {
		return e, nil
	}
	item, err := t.t.Get([]byte(logKey(n)))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	v, err := item.ValueCopy(nil)
	if err != nil {
		return nil, err
	}
	e := newEntryValue(v)
	t.boxes.remember(n, e)
	return e, nil
}
