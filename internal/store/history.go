package store

import (
	"fmt"
	"strconv"

	json "github.com/goccy/go-json"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// History: what the broker keeps of delivered messages and published topic
// records, for intercom history, search and web.
//
//	hist/<cursor>       a chunk of kept entries (TTL), history_chunk.go
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
