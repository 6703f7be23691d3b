package store

import (
	"sync"

	json "github.com/goccy/go-json"
)

// The message index: for each stored message id, the inbox or outbox key
// that holds it. It lives in memory and is rebuilt at Open from the stored
// messages themselves (each carries its id), so it costs no write: a
// message used to cost two more Badger entries for it (written with the
// message, deleted with its ack) and a Badger read on its ack, 7–10 µs of
// broker CPU per message in the fan-in bench (docs/performance.md). It is derived data, so a crash cannot make it disagree
// with the store.
//
// A write transaction stages its changes and they reach the shared index
// only once Badger has committed it. Readers of other transactions see the
// index as of the last commit applied, which can be newer than their
// snapshot of Badger (never older than a commit they see, except in the
// moment between a commit and its index update: see Broker.storeKnows).
type msgIndex struct {
	mu sync.RWMutex
	m  map[string]string
}

func newMsgIndex() *msgIndex { return &msgIndex{m: map[string]string{}} }

func (x *msgIndex) get(id string) (string, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	k, ok := x.m[id]
	return k, ok
}

// apply makes a committed transaction's changes visible.
func (x *msgIndex) apply(changes map[string]indexChange) {
	if len(changes) == 0 {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for id, c := range changes {
		if c.removed {
			delete(x.m, id)
		} else {
			x.m[id] = c.key
		}
	}
}

func (x *msgIndex) len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.m)
}

// indexChange is one staged change of a transaction.
type indexChange struct {
	key     string
	removed bool
}

// MessageKey returns the inbox or outbox key of stored message id, as this
// transaction sees it (its own staged changes first).
func (t *Txn) MessageKey(id string) (string, bool) {
	if c, ok := t.idx[id]; ok {
		return c.key, !c.removed
	}
	if t.x == nil {
		return "", false
	}
	return t.x.get(id)
}

// IndexMessage records that message id is stored under key (an inbox or
// outbox key), from this transaction's commit on.
func (t *Txn) IndexMessage(id, key string) { t.stage(id, indexChange{key: key}) }

// UnindexMessage forgets where message id was stored, from this
// transaction's commit on.
func (t *Txn) UnindexMessage(id string) { t.stage(id, indexChange{removed: true}) }

func (t *Txn) stage(id string, c indexChange) {
	if t.idx == nil {
		t.idx = map[string]indexChange{}
	}
	t.idx[id] = c
}

// rebuildIndex fills the index from every stored inbox and outbox entry,
// handing each to visit when not nil.
func (s *Store) rebuildIndex(visit func(key string, val []byte)) error {
	var stored struct {
		ID string `json:"id"`
	}
	return s.View(func(txn *Txn) error {
		for _, prefix := range []string{InboxesPrefix, OutboxesPrefix} {
			err := txn.Scan(prefix, func(key string, val []byte) (bool, error) {
				stored.ID = ""
				if json.Unmarshal(val, &stored) == nil && stored.ID != "" {
					s.index.m[stored.ID] = key
				}
				if visit != nil {
					visit(key, val)
				}
				return true, nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
}
