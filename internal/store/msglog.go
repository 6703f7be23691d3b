package store

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// The message log (format 3): the messages stored by one commit are one
// Badger entry, and what leaves the store later is a compact ack record,
// instead of one entry per message and one delete per ack:
//
//	mlog/<n>        the messages stored by commit n: records of
//	                (slot key, message JSON), in the order put
//	mack/<n>/<k>    the records of log entry n that commit k removed
//	                (acked, replaced, forgotten): their indexes, uvarints
//
// (<n>, <k> 20 digits, one counter). Once every record of an entry is
// removed, the entry and its ack records are deleted. Which record is
// where (each box's slots in order, each slot's entry and index) is kept
// in memory (msgBoxes) and rebuilt at Open from the log and its ack
// records, as the message index is. Ack records are written without being
// read, so two transactions removing messages of one entry never conflict;
// an ack record of an entry deleted meanwhile is removed at the next Open.

const (
	logPrefix     = "mlog/"
	logAckPrefix  = "mack/"
	logEntryLimit = 64 << 10 // bytes of records per log entry, about
	// logCacheBytes: the values of recent log entries kept in memory, so
	// that an ack (the history's copy, a trace) reads its message without
	// Badger copying the whole entry out; entries are never rewritten, so
	// a cached value is right for as long as the entry lives.
	logCacheBytes = 8 << 20
)

func logKey(n uint64) string { return numKey(logPrefix, n) }

func logAckKey(n, k uint64) string { return numKey(logAckPrefix+digits20(n)+"/", k) }

func numKey(prefix string, n uint64) string { return prefix + digits20(n) }

func digits20(n uint64) string {
	var b [20]byte
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[:])
}

// parseLogAckKey reads mack/<n>/<k>.
func parseLogAckKey(key string) (n, k uint64, ok bool) {
	rest, found := strings.CutPrefix(key, logAckPrefix)
	if !found {
		return 0, 0, false
	}
	a, b, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, false
	}
	n, err1 := strconv.ParseUint(a, 10, 64)
	k, err2 := strconv.ParseUint(b, 10, 64)
	return n, k, err1 == nil && err2 == nil
}

// logRecord is one stored message of a log entry.
type logRecord struct {
	at   Slot
	data []byte // the message, JSON
	id   string
}

func appendRecord(b []byte, at Slot, data []byte) []byte {
	k := at.key()
	b = binary.AppendUvarint(b, uint64(len(k)))
	b = append(b, k...)
	b = binary.AppendUvarint(b, uint64(len(data)))
	return append(b, data...)
}

// eachRecord calls fn with every record of a log entry's value, in order;
// data aliases v.
func eachRecord(v []byte, fn func(i int, key string, data []byte) bool) error {
	for i := 0; len(v) > 0; i++ {
		kl, n := binary.Uvarint(v)
		if n <= 0 || uint64(len(v)-n) < kl {
			return fmt.Errorf("log record %d: %w", i, ErrUnreadable)
		}
		key := string(v[n : n+int(kl)])
		v = v[n+int(kl):]
		dl, n := binary.Uvarint(v)
		if n <= 0 || uint64(len(v)-n) < dl {
			return fmt.Errorf("log record %d: %w", i, ErrUnreadable)
		}
		if !fn(i, key, v[n:n+int(dl)]) {
			return nil
		}
		v = v[n+int(dl):]
	}
	return nil
}

func encodeIndexes(is []int32) []byte {
	var b []byte
	for _, i := range is {
		b = binary.AppendUvarint(b, uint64(i))
	}
	return b
}

func decodeIndexes(v []byte) ([]int32, error) {
	var out []int32
	for len(v) > 0 {
		i, n := binary.Uvarint(v)
		if n <= 0 {
			return nil, ErrUnreadable
		}
		out = append(out, int32(i))
		v = v[n:]
	}
	return out, nil
}

// txnLog is what one write transaction changes in the log; flush writes
// it into the transaction and apply makes it visible after the commit.
type txnLog struct {
	put   []logRecord      // messages stored by this transaction, in order
	putAt map[Slot]int     // slot -> index in put (-1: put, then removed)
	gone  map[Slot]liveMsg // stored messages this transaction removed
	// set by flush, for apply:
	flushed bool
	entries []newEntry  // the entries written
	written []placedMsg // where each put went
	acks    [][2]uint64 // (entry, ack record) written
	deleted []uint64    // entries deleted
}

func (t *Txn) mlog() *txnLog {
	if t.ml == nil {
		t.ml = &txnLog{putAt: map[Slot]int{}, gone: map[Slot]liveMsg{}}
	}
	return t.ml
}

// stored reports what this transaction sees in slot at: a message put by
// it (data), one committed before (ref), or nothing.
func (t *Txn) stored(at Slot) (data []byte, l liveMsg, put, ok bool) {
	if t.ml != nil {
		if i, in := t.ml.putAt[at]; in {
			if i < 0 {
				return nil, liveMsg{}, false, false
			}
			return t.ml.put[i].data, liveMsg{}, true, true
		}
		if _, g := t.ml.gone[at]; g {
			return nil, liveMsg{}, false, false
		}
	}
	if t.boxes == nil {
		return nil, liveMsg{}, false, false
	}
	l, ok = t.boxes.live(at)
	return nil, l, false, ok
}

func (t *Txn) putRecord(at Slot, id string, data []byte) {
	ml := t.mlog()
	if _, _, _, ok := t.stored(at); ok {
		t.removeRecord(at)
	}
	ml.putAt[at] = len(ml.put)
	ml.put = append(ml.put, logRecord{at: at, data: data, id: id})
}

// removeRecord removes the message in slot at; false if there was none.
func (t *Txn) removeRecord(at Slot) bool {
	_, l, put, ok := t.stored(at)
	if !ok {
		return false
	}
	ml := t.mlog()
	if put {
		i := ml.putAt[at]
		ml.put[i].data = nil
		ml.putAt[at] = -1
		return true
	}
	ml.gone[at] = l
	return true
}

// readRecord returns a copy of the message in slot at, or ErrNotFound.
func (t *Txn) readRecord(at Slot) ([]byte, error) {
	data, l, put, ok := t.stored(at)
	if !ok {
		return nil, ErrNotFound
	}
	if put {
		return data, nil
	}
	v, err := t.logEntry(l.ref.n)
	if err != nil {
		return nil, err
	}
	out, found := v.record(int(l.ref.i))
	if !found {
		return nil, fmt.Errorf("log entry %d has no record %d: %w", l.ref.n, l.ref.i, ErrUnreadable)
	}
	return out, nil
}

// flushLog writes the transaction's log changes: its stored messages as
// log entries, its removals as ack records (or the deletion of entries
// left empty).
func (t *Txn) flushLog() error {
	ml := t.ml
	if ml == nil || t.boxes == nil {
		return nil
	}
	ml.flushed, ml.entries, ml.written, ml.acks, ml.deleted = true, ml.entries[:0], ml.written[:0], ml.acks[:0], ml.deleted[:0]
	var val []byte
	var n uint64
	var count int32
	end := func() error {
		if count == 0 {
			return nil
		}
		ml.entries = append(ml.entries, newEntry{n: n, total: count, val: val})
		err := t.Set(logKey(n), val)
		val, count = nil, 0
		return err
	}
	for _, r := range ml.put {
		if r.data == nil {
			continue
		}
		if count > 0 && len(val)+len(r.data) > logEntryLimit {
			if err := end(); err != nil {
				return err
			}
		}
		if count == 0 {
			n = t.boxes.number()
		}
		val = appendRecord(val, r.at, r.data)
		ml.written = append(ml.written, placedMsg{at: r.at, l: liveMsg{ref: logRef{n: n, i: count}, id: r.id}})
		count++
	}
	if err := end(); err != nil {
		return err
	}
	if len(ml.gone) == 0 {
		return nil
	}
	byEntry := map[uint64][]int32{}
	for _, l := range ml.gone {
		byEntry[l.ref.n] = append(byEntry[l.ref.n], l.ref.i)
	}
	for n, is := range byEntry {
		empty, acks, ok := t.boxes.emptiedBy(n, is)
		if !ok {
			continue // deleted meanwhile by another transaction
		}
		if empty {
			if err := t.Delete(logKey(n)); err != nil {
				return err
			}
			for _, k := range acks {
				if err := t.Delete(logAckKey(n, k)); err != nil {
					return err
				}
			}
			ml.deleted = append(ml.deleted, n)
			continue
		}
		k := t.boxes.number()
		if err := t.Set(logAckKey(n, k), encodeIndexes(is)); err != nil {
			return err
		}
		ml.acks = append(ml.acks, [2]uint64{n, k})
	}
	return nil
}

// newEntry is a log entry a transaction wrote.
type newEntry struct {
	n     uint64
	total int32
	val   []byte
}

// placedMsg is a message a transaction stored, and where.
type placedMsg struct {
	at Slot
	l  liveMsg
}
