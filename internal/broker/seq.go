package broker

import (
	"fmt"
	"sync"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/intercom-dev/intercom/internal/store"
)

// seqSource hands out strictly increasing inbox sequence numbers that survive
// restarts: the highest lease is stored, so numbers never repeat (gaps after
// a crash are harmless).
type seqSource struct {
	st    *store.Store
	mu    sync.Mutex
	next  uint64
	limit uint64
}

const seqKey = "meta/seq"
const seqLease = 100000

func newSeqSource(st *store.Store) (*seqSource, error) {
	s := &seqSource{st: st}
	err := st.View(func(txn *store.Txn) error {
		v, err := store.Get(txn, seqKey)
		if err == store.ErrNotFound {
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
func (s *seqSource) Next() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next >= s.limit {
		lim := s.next + seqLease
		err := s.st.Update(func(txn *badger.Txn) error {
			return txn.Set([]byte(seqKey), []byte(fmt.Sprint(lim)))
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
