package store

import (
	"fmt"
	"sort"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// loadMessages rebuilds the message index and the log's layout in memory
// from every log entry and ack record, handing each stored message
// (decoded once) to visit when not nil. Ack records of entries that are
// gone, and entries whose records are all removed, are deleted.
func (s *Store) loadMessages(visit func(Slot, *wire.Message)) error {
	x := s.boxes
	removed := map[uint64]map[int32]struct{}{}
	acks := map[uint64][]uint64{}
	var top uint64
	err := s.View(func(txn *Txn) error {
		if err := txn.Scan(logAckPrefix, func(k string, v []byte) (bool, error) {
			n, a, ok := parseLogAckKey(k)
			if !ok {
				return true, nil
			}
			top = max(top, n, a)
			is, err := decodeIndexes(v)
			if err != nil {
				s.log.Warn("skip unreadable ack record", "key", k, "err", err)
			}
			if removed[n] == nil {
				removed[n] = map[int32]struct{}{}
			}
			for _, i := range is {
				removed[n][i] = struct{}{}
			}
			acks[n] = append(acks[n], a)
			return true, nil
		}); err != nil {
			return err
		}
		return txn.Scan(logPrefix, func(k string, v []byte) (bool, error) {
			n, err := parseNum(k, logPrefix)
			if err != nil {
				return true, nil
			}
			top = max(top, n)
			e := &logEntry{removed: removed[n], acks: acks[n]} // removed may be nil: none yet
			delete(acks, n)                                    // what is left in acks has no entry
			err = eachRecord(v, func(i int, key string, data []byte) bool {
				e.total++
				if _, gone := e.removed[int32(i)]; gone {
					return true
				}
				at, ok := parseSlot(key)
				if !ok {
					return true
				}
				ref := logRef{n: n, i: int32(i)}
				m, err := decodeMessage(data)
				if err != nil { // kept in its slot (a scan skips it, a forget removes it)
					s.log.Warn("unreadable message", "slot", key, "err", err)
					x.addLocked(at, liveMsg{ref: ref})
					return true
				}
				x.addLocked(at, liveMsg{ref: ref, id: m.ID})
				if m.ID != "" {
					s.index.m[m.ID] = at
				}
				if visit != nil {
					visit(at, &m)
				}
				return true
			})
			if err != nil {
				s.log.Warn("log entry partly unreadable", "key", k, "err", err)
				e.total = 1 << 30 // never deleted for its records all acked
			}
			x.entries[n] = e
			return true, nil
		})
	})
	if err != nil {
		return err
	}
	x.next = top + 1
	// Leftovers of concurrent removals: ack records of deleted entries,
	// entries with nothing left.
	var stale []string
	for n, ks := range acks {
		for _, k := range ks {
			stale = append(stale, logAckKey(n, k))
		}
	}
	for n, e := range x.entries {
		if int32(len(e.removed)) >= e.total {
			stale = append(stale, logKey(n))
			for _, k := range e.acks {
				stale = append(stale, logAckKey(n, k))
			}
			delete(x.entries, n)
		}
	}
	if len(stale) == 0 {
		return nil
	}
	sort.Strings(stale)
	return s.Update(func(txn *Txn) error {
		for _, k := range stale {
			if err := txn.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}

func parseNum(key, prefix string) (uint64, error) {
	if len(key) != len(prefix)+20 || key[:len(prefix)] != prefix {
		return 0, fmt.Errorf("not a %s key: %q", prefix, key)
	}
	var n uint64
	for _, c := range key[len(prefix):] {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("not a %s key: %q", prefix, key)
		}
		n = n*10 + uint64(c-'0')
	}
	return n, nil
}

// migrateBoxes moves format 2's inbox/ and outbox/ entries (one key per
// message) into log entries, in chunks, each chunk's new entry and the
// deletion of its old keys in one transaction, so that an interrupted
// migration is resumed by the next Open. Called before loadMessages, with
// nothing else writing.
func (s *Store) migrateBoxes() error {
	top := uint64(0)
	if err := s.View(func(txn *Txn) error {
		txn.Keys(logPrefix, func(k string) bool {
			if n, err := parseNum(k, logPrefix); err == nil {
				top = max(top, n)
			}
			return true
		})
		txn.Keys(logAckPrefix, func(k string) bool {
			if n, a, ok := parseLogAckKey(k); ok {
				top = max(top, n, a)
			}
			return true
		})
		return nil
	}); err != nil {
		return err
	}
	s.boxes.next = top + 1
	for _, prefix := range []string{inboxesPrefix, outboxesPrefix} {
		for {
			var keys []string
			var vals [][]byte
			size := 0
			err := s.View(func(txn *Txn) error {
				return txn.Scan(prefix, func(k string, v []byte) (bool, error) {
					keys, vals = append(keys, k), append(vals, v)
					size += len(v)
					return len(keys) < 256 && size < logEntryLimit, nil
				})
			})
			if err != nil {
				return err
			}
			if len(keys) == 0 {
				break
			}
			err = s.Update(func(txn *Txn) error {
				var val []byte
				for i, k := range keys {
					if at, ok := parseSlot(k); ok {
						val = appendRecord(val, at, vals[i])
					}
					if err := txn.Delete(k); err != nil {
						return err
					}
				}
				if len(val) == 0 {
					return nil
				}
				return txn.Set(logKey(s.boxes.number()), val)
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}
