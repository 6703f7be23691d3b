package store

import "sync"

// The message index: for each stored message id, the slot (inbox or
// outbox) that holds it. It lives in memory and is rebuilt at Open from the
// stored messages themselves (each carries its id), so it costs no write
// and no read on an ack. It is derived data, so a crash cannot make it
// disagree with the store.
//
// A write transaction stages its changes and they reach the shared index
// only once Badger has committed it. Readers of other transactions see the
// index as of the last commit applied, which can be newer than their
// snapshot of Badger (never older than a commit they see, except in the
// moment between a commit and its index update: see Broker.storeKnows).
type msgIndex struct {
	mu sync.RWMutex
	m  map[string]Slot
}

func newMsgIndex() *msgIndex { return &msgIndex{m: map[string]Slot{}} }

func (x *msgIndex) get(id string) (Slot, bool) {
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
			x.m[id] = c.slot
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
	slot    Slot
	removed bool
}

func (t *Txn) stage(id string, c indexChange) {
	if t.idx == nil {
		t.idx = map[string]indexChange{}
	}
	t.idx[id] = c
}
