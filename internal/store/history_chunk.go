package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/klauspost/compress/s2"
)

// The history's entries are stored in chunks: one Badger entry per
// history write, holding every entry of that write, so that keeping a
// message costs no memtable insert of its own (issue 34).
//
//	hist/<cursor of the chunk's last entry>  historyChunkKind, then for each
//	                                         entry, oldest first: uvarint
//	                                         (cursor - previous cursor, the
//	                                         first from 0), its kind byte,
//	                                         uvarint len(data), data; or
//	                                         historyPackedKind, then those
//	                                         entries as one s2 block
//
// A chunk is packed (s2, the compression Badger uses for its tables) when
// that saves an eighth or more: what the history costs the broker is the
// bytes it writes (the WAL, the memtable, its sync, the tables' flushes
// and compactions), and the messages of one write share most of their
// JSON (keys, session ids, names, paths).
//
// Keying a chunk by its last cursor makes Seek(after+1) land on the chunk
// holding the first entry after a cursor. Chunks do not overlap: every
// entry of a later chunk has a greater cursor. A store written before
// chunks holds one entry per key (kind byte 'm' or 'r', then the data,
// under its own cursor): it is read as a chunk of one, and expires or is
// trimmed as it did.

// historyChunkKind and historyPackedKind mark a chunk, plain or packed; a
// single old entry starts with its own kind.
const (
	historyChunkKind  byte = 'c'
	historyPackedKind byte = 'z'
)

// historyPackFrom is the smallest chunk worth packing.
const historyPackFrom = 512

// HistoryItem is one kept entry: its cursor, its kind (HistoryMessage,
// HistoryRecord) and its data.
type HistoryItem struct {
	Cursor uint64
	Kind   byte
	Data   []byte
}

// errHistoryChunk: a chunk's framing is unreadable.
var errHistoryChunk = errors.New("history chunk unreadable")

// plainHistorySize is at most the bytes items take in a plain chunk.
func plainHistorySize(items []HistoryItem) int {
	n := 1
	for _, it := range items {
		n += 2*binary.MaxVarintLen64 + 1 + len(it.Data)
	}
	return n
}

func encodeHistoryChunk(items []HistoryItem) []byte {
	var e HistoryEncoder
	return e.encode(items)
}

// HistoryEncoder encodes chunks, reusing its buffers: one goroutine's.
type HistoryEncoder struct{ plain, packed []byte }

// encode returns items' chunk value, a new slice.
func (e *HistoryEncoder) encode(items []HistoryItem) []byte {
	if need := plainHistorySize(items); cap(e.plain) < need {
		e.plain = make([]byte, 0, need)
	}
	val := append(e.plain[:0], historyChunkKind)
	var prev uint64
	for _, it := range items {
		val = binary.AppendUvarint(val, it.Cursor-prev)
		val = append(val, it.Kind)
		val = binary.AppendUvarint(val, uint64(len(it.Data)))
		val = append(val, it.Data...)
		prev = it.Cursor
	}
	e.plain = val
	if len(val) < historyPackFrom {
		return bytes.Clone(val)
	}
	if need := 1 + s2.MaxEncodedLen(len(val)-1); cap(e.packed) < need {
		e.packed = make([]byte, need)
	}
	packed := e.packed[:cap(e.packed)]
	packed[0] = historyPackedKind
	n := len(s2.Encode(packed[1:], val[1:]))
	if n > (len(val)-1)*7/8 {
		return bytes.Clone(val)
	}
	return bytes.Clone(packed[:1+n])
}

// decodeHistoryChunk calls fn with each entry of the value stored under
// key (a chunk, or a single old entry), oldest first, until fn returns
// false; false when fn stopped it. data aliases val.
func decodeHistoryChunk(key uint64, val []byte, fn func(it HistoryItem) bool) (bool, error) {
	if len(val) == 0 {
		return true, nil
	}
	entries := val[1:]
	switch val[0] {
	case historyChunkKind:
	case historyPackedKind:
		var err error
		if entries, err = s2.Decode(nil, entries); err != nil {
			return true, fmt.Errorf("%w: %w", errHistoryChunk, err)
		}
	default:
		return fn(HistoryItem{Cursor: key, Kind: val[0], Data: val[1:]}), nil
	}
	var prev uint64
	for rest := entries; len(rest) > 0; {
		delta, n := binary.Uvarint(rest)
		if n <= 0 || len(rest) < n+1 {
			return true, fmt.Errorf("%w: entry after cursor %d", errHistoryChunk, prev)
		}
		kind := rest[n]
		rest = rest[n+1:]
		size, m := binary.Uvarint(rest)
		if m <= 0 || uint64(len(rest)-m) < size {
			return true, fmt.Errorf("%w: entry after cursor %d", errHistoryChunk, prev)
		}
		it := HistoryItem{Cursor: prev + delta, Kind: kind, Data: rest[m : m+int(size)]}
		rest, prev = rest[m+int(size):], it.Cursor
		if !fn(it) {
			return false, nil
		}
	}
	return true, nil
}

func historyKey(cursor uint64) []byte { return []byte(historyPrefix + HistoryCursor(cursor)) }

// HistoryChunk is entries encoded for PutHistory: built before the
// transaction, so that a commit only stores it.
type HistoryChunk struct {
	last uint64
	val  []byte
}

// NewHistoryChunk encodes items (cursors increasing, all after every
// entry kept before; at least one).
func NewHistoryChunk(items []HistoryItem) HistoryChunk {
	var e HistoryEncoder
	return e.Chunk(items)
}

// Chunk encodes items as NewHistoryChunk does.
func (e *HistoryEncoder) Chunk(items []HistoryItem) HistoryChunk {
	return HistoryChunk{last: items[len(items)-1].Cursor, val: e.encode(items)}
}

// Size is the bytes the chunk stores.
func (c HistoryChunk) Size() int { return len(c.val) }

// PutHistory keeps a chunk for ttl.
func (t *Txn) PutHistory(c HistoryChunk, ttl time.Duration) error {
	return t.t.SetEntry(badger.NewEntry(historyKey(c.last), c.val).WithTTL(ttl))
}

// DeleteHistory removes the chunk under cursor (as HistorySizes names it).
func (t *Txn) DeleteHistory(cursor string) error {
	return t.t.Delete([]byte(historyPrefix + cursor))
}

// historyChunks calls fn with each chunk's key cursor and value from the
// first chunk that may hold an entry after cursor after ("" for all),
// oldest first, until fn returns false. A key that is no cursor (none is
// written) is skipped.
func (t *Txn) historyChunks(after string, fn func(key uint64, val []byte) (bool, error)) error {
	opts := badger.DefaultIteratorOptions
	opts.Prefix = []byte(historyPrefix)
	it := t.t.NewIterator(opts)
	defer it.Close()
	start := historyPrefix
	if after != "" {
		start = historyPrefix + after + "\x00"
	}
	for it.Seek([]byte(start)); it.ValidForPrefix(opts.Prefix); it.Next() {
		item := it.Item()
		key, err := ParseHistoryCursor(strings.TrimPrefix(string(item.Key()), historyPrefix))
		if err != nil {
			t.logger().Warn("history key skipped", "err", err)
			continue
		}
		val, err := item.ValueCopy(nil)
		if err != nil {
			return err
		}
		if more, err := fn(key, val); err != nil || !more {
			return err
		}
	}
	return nil
}

// HistoryAfter calls fn with each kept entry after cursor after ("" for
// all), oldest first, until fn returns false. data is fn's only while it
// runs.
func (t *Txn) HistoryAfter(after string, fn func(cursor string, kind byte, data []byte) bool) error {
	from, err := ParseHistoryCursor(after)
	if err != nil {
		return err
	}
	return t.historyChunks(after, func(key uint64, val []byte) (bool, error) {
		more, err := decodeHistoryChunk(key, val, func(it HistoryItem) bool {
			return it.Cursor <= from || fn(HistoryCursor(it.Cursor), it.Kind, it.Data)
		})
		if errors.Is(err, errHistoryChunk) { // what it held is lost: read on
			t.logger().Warn("history chunk skipped", "key", HistoryCursor(key), "err", err)
			return true, nil
		}
		return more, err
	})
}

// HistoryChunkKeys calls fn with the key cursor and the size of each chunk
// holding an entry for which match is true, or unreadable, oldest first,
// until fn returns false.
func (t *Txn) HistoryChunkKeys(match func(cursor string, kind byte, data []byte) bool, fn func(key string, size int) bool) error {
	return t.historyChunks("", func(key uint64, val []byte) (bool, error) {
		found := false
		_, err := decodeHistoryChunk(key, val, func(it HistoryItem) bool {
			found = match(HistoryCursor(it.Cursor), it.Kind, it.Data)
			return !found
		})
		if errors.Is(err, errHistoryChunk) {
			found = true
		} else if err != nil {
			return false, err
		}
		return !found || fn(HistoryCursor(key), len(val)), nil
	})
}

// FilterHistory rewrites the chunk under key without its entries for
// which drop is true, keeping its expiry, and returns how many it
// removed: the chunk is deleted when none is left, and stored under its
// new last cursor otherwise. An absent chunk removes nothing; an
// unreadable one is deleted (and counts as one).
func (t *Txn) FilterHistory(key string, drop func(cursor string, kind byte, data []byte) bool) (int, error) {
	n, err := ParseHistoryCursor(key)
	if err != nil {
		return 0, err
	}
	item, err := t.t.Get(historyKey(n))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	val, err := item.ValueCopy(nil)
	if err != nil {
		return 0, err
	}
	var keep []HistoryItem
	removed := 0
	if _, err := decodeHistoryChunk(n, val, func(it HistoryItem) bool {
		if drop(HistoryCursor(it.Cursor), it.Kind, it.Data) {
			removed++
		} else {
			keep = append(keep, it)
		}
		return true
	}); errors.Is(err, errHistoryChunk) {
		return 1, t.t.Delete(historyKey(n))
	} else if err != nil {
		return 0, err
	}
	if removed == 0 {
		return 0, nil
	}
	if err := t.t.Delete(historyKey(n)); err != nil || len(keep) == 0 {
		return removed, err
	}
	e := badger.NewEntry(historyKey(keep[len(keep)-1].Cursor), encodeHistoryChunk(keep))
	e.ExpiresAt = item.ExpiresAt()
	return removed, t.t.SetEntry(e)
}

// HistorySizes calls fn with each chunk's key cursor and its size on disk
// (estimated), oldest first, without reading values, until fn returns
// false.
func (t *Txn) HistorySizes(fn func(cursor string, size int64) bool) {
	opts := badger.DefaultIteratorOptions
	opts.Prefix, opts.PrefetchValues = []byte(historyPrefix), false
	it := t.t.NewIterator(opts)
	defer it.Close()
	for it.Seek(opts.Prefix); it.ValidForPrefix(opts.Prefix); it.Next() {
		if !fn(strings.TrimPrefix(string(it.Item().Key()), historyPrefix), it.Item().EstimatedSize()) {
			return
		}
	}
}

// LastHistoryCursor returns the newest cursor kept, 0 for none: the last
// chunk's key is its newest entry's cursor.
func (t *Txn) LastHistoryCursor() (uint64, error) {
	opts := badger.DefaultIteratorOptions
	opts.Prefix, opts.PrefetchValues, opts.Reverse = []byte(historyPrefix), false, true
	it := t.t.NewIterator(opts)
	defer it.Close()
	it.Seek([]byte(historyPrefix + "\xff"))
	if !it.ValidForPrefix(opts.Prefix) {
		return 0, nil
	}
	return ParseHistoryCursor(strings.TrimPrefix(string(it.Item().Key()), historyPrefix))
}
