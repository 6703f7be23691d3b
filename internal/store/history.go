package store

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	json "github.com/goccy/go-json"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// History: what the broker keeps of delivered messages and published topic
// records, for intercom history, search and web.
//
//	hist/<cursor>       a kept entry (TTL): one kind byte, then its JSON
//	meta/histepoch      the history's epoch (decimal): changed by a purge
//
// <cursor> is a zero-padded 20-digit number, strictly increasing in the
// order entries are kept (the broker hands them out), so that a reader
// that has read up to a cursor finds every later entry after it.

const (
	historyPrefix   = "hist/"
	historyEpochKey = "meta/histepoch"
)

// History entry kinds, the first byte of a kept value.
const (
	HistoryMessage byte = 'm'
	HistoryRecord  byte = 'r'
)

// HistoryCursor formats n as a cursor.
func HistoryCursor(n uint64) string { return fmt.Sprintf("%020d", n) }

// ParseHistoryCursor reads a cursor ("" is 0).
func ParseHistoryCursor(c string) (uint64, error) {
	if c == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(c, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("history cursor %q: %w", c, err)
	}
	return n, nil
}

// PutHistory keeps entry data of kind under cursor n for ttl.
func (t *Txn) PutHistory(n uint64, kind byte, data []byte, ttl time.Duration) error {
	val := make([]byte, 0, len(data)+1)
	val = append(append(val, kind), data...)
	return t.t.SetEntry(badger.NewEntry([]byte(historyPrefix+HistoryCursor(n)), val).WithTTL(ttl))
}

// DeleteHistory removes the entry under cursor.
func (t *Txn) DeleteHistory(cursor string) error {
	return t.t.Delete([]byte(historyPrefix + cursor))
}

// HistoryAfter calls fn with each kept entry after cursor after ("" for
// all), oldest first, until fn returns false.
func (t *Txn) HistoryAfter(after string, fn func(cursor string, kind byte, data []byte) bool) error {
	opts := badger.DefaultIteratorOptions
	opts.Prefix = []byte(historyPrefix)
	it := t.t.NewIterator(opts)
	defer it.Close()
	start := historyPrefix
	if after != "" {
		start = historyPrefix + after + "\x00"
	}
	for it.Seek([]byte(start)); it.ValidForPrefix(opts.Prefix); it.Next() {
		val, err := it.Item().ValueCopy(nil)
		if err != nil {
			return err
		}
		if len(val) == 0 {
			continue
		}
		cursor := strings.TrimPrefix(string(it.Item().Key()), historyPrefix)
		if !fn(cursor, val[0], val[1:]) {
			return nil
		}
	}
	return nil
}

// HistorySizes calls fn with each kept entry's cursor and its size on disk
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

// LastHistoryCursor returns the newest cursor kept, 0 for none.
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

// HistoryEpoch returns the history's epoch ("0" before any purge).
func (t *Txn) HistoryEpoch() (string, error) {
	v, err := t.Get(historyEpochKey)
	if err == ErrNotFound {
		return "0", nil
	}
	return string(v), err
}

// SetHistoryEpoch stores the history's epoch.
func (t *Txn) SetHistoryEpoch(epoch string) error { return t.Set(historyEpochKey, []byte(epoch)) }

// MessageBytesAt returns the stored encoding of the message at, as history
// keeps it.
func (t *Txn) MessageBytesAt(at Slot) ([]byte, error) { return t.readRecord(at) }

// DecodeHistory decodes a kept value of kind: a message (HistoryMessage) or
// a topic record (HistoryRecord); false when it is neither or unreadable.
func DecodeHistory(kind byte, data []byte) (*wire.Message, *wire.TopicRecord, bool) {
	switch kind {
	case HistoryMessage:
		var m wire.Message
		if json.Unmarshal(data, &m) != nil {
			return nil, nil, false
		}
		return &m, nil, true
	case HistoryRecord:
		var r wire.TopicRecord
		if json.Unmarshal(data, &r) != nil {
			return nil, nil, false
		}
		return nil, &r, true
	}
	return nil, nil, false
}
