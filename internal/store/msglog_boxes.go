package store

import "sync"

// The log's layout in memory: which message is where. Rebuilt at Open
// (msglog_open.go), changed by each commit once it is on disk (apply).

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
	// oldest dropped first (msglog_cache.go)
	cache      map[uint64]*entryValue
	cacheOrder []uint64
	cacheSize  int
}

func newMsgBoxes() *msgBoxes {
	return &msgBoxes{slots: map[Slot]liveMsg{}, boxes: map[boxID]*box{}, entries: map[uint64]*logEntry{}, next: 1, cache: map[uint64]*entryValue{}}
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

// emptiedBy reports whether removing records is of entry n leaves none
// (as of the last commit applied), and the entry's ack records; false when
// the entry is gone.
func (x *msgBoxes) emptiedBy(n uint64, is []int32) (empty bool, acks []uint64, ok bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	e := x.entries[n]
	if e == nil {
		return false, nil, false
	}
	left := int(e.total) - len(e.removed)
	for _, i := range is {
		if _, done := e.removed[i]; !done {
			left--
		}
	}
	if left > 0 {
		return false, nil, true
	}
	return true, append([]uint64(nil), e.acks...), true
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

// apply makes a committed transaction's log changes visible.
func (x *msgBoxes) apply(ml *txnLog) {
	if ml == nil || !ml.flushed {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, e := range ml.entries {
		x.entries[e.n] = &logEntry{total: e.total} // removed made at its first removal
		x.rememberLocked(e.n, newEntryValue(e.val))
	}
	for _, p := range ml.written {
		x.addLocked(p.at, p.l)
	}
	for at, l := range ml.gone {
		if cur, ok := x.slots[at]; ok && cur.ref == l.ref {
			x.removeLocked(at)
		}
		if e := x.entries[l.ref.n]; e != nil {
			if e.removed == nil {
				e.removed = map[int32]struct{}{}
			}
			e.removed[l.ref.i] = struct{}{}
		}
	}
	for _, a := range ml.acks {
		if e := x.entries[a[0]]; e != nil {
			e.acks = append(e.acks, a[1])
		}
	}
	for _, n := range ml.deleted {
		delete(x.entries, n)
		x.forgetLocked(n)
	}
}
