package store

import (
	"fmt"
	"sync"
)

// Sequence hands out strictly increasing inbox sequence numbers that survive
// restarts: the highest lease is stored (seqKey), so numbers never repeat
// (gaps after a crash are harmless).
type Sequence struct {
	st    *Store
	mu    sync.Mutex
	next  uint64
	limit uint64
}

const seqLease = 100000

// NewSequence continues the sequence stored in st.
func NewSequence(st *Store) (*Sequence, error) {
	s := &Sequence{st: st}
	err := st.View(func(txn *Txn) error {
		v, err := txn.Get(seqKey)
		if err == ErrNotFound {
			s.next = 1
			return nil
		}
		if err != nil {
			return err
		}
		_, err = fmt.Sscan(string(v), &s.next)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("load sequence: %w", err)
	}
	s.limit = s.next
	return s, nil
}

// Next returns the next number, leasing a new block durably when needed.
func (s *Sequence) Next() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next >= s.limit {
		lim := s.next + seqLease
		err := s.st.Update(func(txn *Txn) error {
			return txn.Set(seqKey, []byte(fmt.Sprint(lim)))
		})
		if err != nil {
			return 0, fmt.Errorf("lease sequence: %w", err)
		}
		s.limit = lim
	}
	n := s.next
	s.next++
	return n, nil
}
