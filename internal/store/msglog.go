package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	badger "github.com/dgraph-io/badger/v4"
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

// recordAt returns a copy of record i of a log entry's value.
func recordAt(v []byte, i int) ([]byte, bool) {
	var out []byte
	found := false
	_ = eachRecord(v, func(j int, _ string, data []byte) bool {
		if j == i {
			out, found = append([]byte(nil), data...), true
			return false
		}
		return true
	})
	return out, found
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

// logRef is where a stored message is: record i of log entry n.
type logRef struct {
	n uint64
	i int32
}

type liveMsg struct {
	ref logRef
	id  string
}

type boxID struct {
	owner  string
	outbox bool
}

func boxOf(at Slot) boxID { return boxID{at.Owner, at.Outbox} }

// box holds the sequence numbers of one inbox or outbox in order; a
// number whose slot is gone from msgBoxes.slots is dead and skipped.
type box struct {
	seqs []uint64
	head int // seqs[:head] are dead
	dead int // dead entries in seqs[head:]
}

// logEntry is what the store knows of one log entry.
type logEntry struct {
	total   int32
	removed map[int32]struct{}
	acks    []uint64 // the k of each of its ack records
}

// msgBoxes is the in-memory layout of the log: every stored message's
// slot, each box in order, each entry's removed records.
type msgBoxes struct {
	mu      sync.RWMutex
	slots   map[Slot]liveMsg
	boxes   map[boxID]*box
	entries map[uint64]*logEntry
	next    uint64 // the next log entry or ack record number (under mu)
	// cache: values of log entries by number, at most logCacheBytes, the
	// oldest dropped first
	cache      map[uint64][]byte
	cacheOrder []uint64
	cacheSize  int
}

func newMsgBoxes() *msgBoxes {
	return &msgBoxes{slots: map[Slot]liveMsg{}, boxes: map[boxID]*box{}, entries: map[uint64]*logEntry{}, next: 1, cache: map[uint64][]byte{}}
}

func (x *msgBoxes) cached(n uint64) []byte {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.cache[n]
}

func (x *msgBoxes) remember(n uint64, v []byte) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.rememberLocked(n, v)
}

func (x *msgBoxes) rememberLocked(n uint64, v []byte) {
	if _, ok := x.cache[n]; ok || len(v) > logCacheBytes/4 {
		return
	}
	x.cache[n] = v
	x.cacheOrder = append(x.cacheOrder, n)
	x.cacheSize += len(v)
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
	if v, ok := x.cache[n]; ok {
		x.cacheSize -= len(v)
		delete(x.cache, n)
	}
}

func (x *msgBoxes) number() uint64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	n := x.next
	x.next++
	return n
}

func (x *msgBoxes) live(at Slot) (liveMsg, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	l, ok := x.slots[at]
	return l, ok
}

// removedOf returns a copy of entry n's removed set and its ack records.
func (x *msgBoxes) removedOf(n uint64) (total int32, removed map[int32]struct{}, acks []uint64, ok bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	e := x.entries[n]
	if e == nil {
		return 0, nil, nil, false
	}
	removed = make(map[int32]struct{}, len(e.removed))
	for i := range e.removed {
		removed[i] = struct{}{}
	}
	return e.total, removed, append([]uint64(nil), e.acks...), true
}

// seqsFrom returns up to max live sequence numbers of box b from seq on,
// in order.
func (x *msgBoxes) seqsFrom(b boxID, from uint64, max int) []uint64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	bx := x.boxes[b]
	if bx == nil {
		return nil
	}
	s := bx.seqs[bx.head:]
	i := 0
	if from > 0 {
		lo, hi := 0, len(s)
		for lo < hi {
			m := (lo + hi) / 2
			if s[m] < from {
				lo = m + 1
			} else {
				hi = m
			}
		}
		i = lo
	}
	var out []uint64
	for ; i < len(s) && len(out) < max; i++ {
		if _, ok := x.slots[Slot{Owner: b.owner, Seq: s[i], Outbox: b.outbox}]; ok {
			out = append(out, s[i])
		}
	}
	return out
}

func (x *msgBoxes) addLocked(at Slot, l liveMsg) {
	if _, ok := x.slots[at]; ok {
		x.slots[at] = l
		return
	}
	x.slots[at] = l
	b := x.boxes[boxOf(at)]
	if b == nil {
		b = &box{}
		x.boxes[boxOf(at)] = b
	}
	if n := len(b.seqs); n == b.head || b.seqs[n-1] < at.Seq {
		b.seqs = append(b.seqs, at.Seq)
		return
	}
	s := b.seqs
	lo, hi := b.head, len(s)
	for lo < hi {
		m := (lo + hi) / 2
		if s[m] < at.Seq {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(s) && s[lo] == at.Seq { // a dead entry for this seq: alive again
		b.dead--
		return
	}
	s = append(s, 0)
	copy(s[lo+1:], s[lo:])
	s[lo] = at.Seq
	b.seqs = s
}

func (x *msgBoxes) removeLocked(at Slot) {
	if _, ok := x.slots[at]; !ok {
		return
	}
	delete(x.slots, at)
	id := boxOf(at)
	b := x.boxes[id]
	if b == nil {
		return
	}
	b.dead++
	for b.head < len(b.seqs) {
		if _, ok := x.slots[Slot{Owner: id.owner, Seq: b.seqs[b.head], Outbox: id.outbox}]; ok {
			break
		}
		b.head++
		b.dead--
	}
	switch {
	case b.head == len(b.seqs):
		delete(x.boxes, id)
	case b.dead > 64 && b.dead > (len(b.seqs)-b.head)/2, b.head > 1024 && b.head > len(b.seqs)/2:
		live := make([]uint64, 0, len(b.seqs)-b.head-b.dead)
		for _, s := range b.seqs[b.head:] {
			if _, ok := x.slots[Slot{Owner: id.owner, Seq: s, Outbox: id.outbox}]; ok {
				live = append(live, s)
			}
		}
		b.seqs, b.head, b.dead = live, 0, 0
	}
}

// txnLog is what one write transaction changes in the log; flush writes
// it into the transaction and apply makes it visible after the commit.
type txnLog struct {
	put     []logRecord       // messages stored by this transaction, in order
	putAt   map[Slot]int      // slot -> index in put (-1: put, then removed)
	gone    map[Slot]liveMsg  // stored messages this transaction removed
	written map[Slot]liveMsg  // set by flush: where each put went
	entries map[uint64]int32  // set by flush: the new entries and their sizes
	values  [][]byte          // set by flush: the new entries' values
	numbers []uint64          // set by flush: their numbers
	acks    map[uint64]uint64 // set by flush: entry -> the ack record written
	deleted map[uint64]bool   // set by flush: entries deleted
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
	out, found := recordAt(v, int(l.ref.i))
	if !found {
		return nil, fmt.Errorf("log entry %d has no record %d: %w", l.ref.n, l.ref.i, ErrUnreadable)
	}
	return out, nil
}

// logEntry returns the value of log entry n (not to be changed), from the
// cache or else from Badger (then cached); ErrNotFound when it is gone, or
// newer than this transaction's snapshot.
func (t *Txn) logEntry(n uint64) ([]byte, error) {
	if v := t.boxes.cached(n); v != nil {
		return v, nil
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
	t.boxes.remember(n, v)
	return v, nil
}

// flushLog writes the transaction's log changes: its stored messages as
// log entries, its removals as ack records (or the deletion of entries
// left empty).
func (t *Txn) flushLog() error {
	ml := t.ml
	if ml == nil || t.boxes == nil {
		return nil
	}
	ml.written, ml.entries, ml.acks, ml.deleted = map[Slot]liveMsg{}, map[uint64]int32{}, map[uint64]uint64{}, map[uint64]bool{}
	ml.values, ml.numbers = nil, nil
	var val []byte
	var n uint64
	var count int32
	end := func() error {
		if count == 0 {
			return nil
		}
		ml.entries[n] = count
		ml.values = append(ml.values, val)
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
			ml.numbers = append(ml.numbers, n)
		}
		val = appendRecord(val, r.at, r.data)
		ml.written[r.at] = liveMsg{ref: logRef{n: n, i: count}, id: r.id}
		count++
	}
	if err := end(); err != nil {
		return err
	}
	byEntry := map[uint64][]int32{}
	for _, l := range ml.gone {
		byEntry[l.ref.n] = append(byEntry[l.ref.n], l.ref.i)
	}
	for n, is := range byEntry {
		total, removed, acks, ok := t.boxes.removedOf(n)
		if !ok {
			continue // deleted meanwhile by another transaction
		}
		for _, i := range is {
			removed[i] = struct{}{}
		}
		if int32(len(removed)) >= total {
			if err := t.Delete(logKey(n)); err != nil {
				return err
			}
			for _, k := range acks {
				if err := t.Delete(logAckKey(n, k)); err != nil {
					return err
				}
			}
			ml.deleted[n] = true
			continue
		}
		k := t.boxes.number()
		if err := t.Set(logAckKey(n, k), encodeIndexes(is)); err != nil {
			return err
		}
		ml.acks[n] = k
	}
	return nil
}

// apply makes a committed transaction's log changes visible.
func (x *msgBoxes) apply(ml *txnLog) {
	if ml == nil || ml.written == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for n, total := range ml.entries {
		x.entries[n] = &logEntry{total: total, removed: map[int32]struct{}{}}
	}
	for i, n := range ml.numbers {
		x.rememberLocked(n, ml.values[i])
	}
	for at, l := range ml.written {
		x.addLocked(at, l)
	}
	for at, l := range ml.gone {
		if cur, ok := x.slots[at]; ok && cur.ref == l.ref {
			x.removeLocked(at)
		}
		if e := x.entries[l.ref.n]; e != nil {
			e.removed[l.ref.i] = struct{}{}
		}
	}
	for n, k := range ml.acks {
		if e := x.entries[n]; e != nil {
			e.acks = append(e.acks, k)
		}
	}
	for n := range ml.deleted {
		delete(x.entries, n)
		x.forgetLocked(n)
	}
}
