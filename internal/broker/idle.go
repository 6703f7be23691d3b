package broker

import (
	"sync"
	"time"
)

// idleWatch counts the client connections (other than the broker's own)
// and, with Options.IdleExit, closes fired once none has been connected for
// that long. It is a leaf: it calls nothing under its lock but tasks.
type idleWatch struct {
	mu      sync.Mutex
	clients map[uint64]bool
	after   time.Duration // 0: never
	timer   *taskTimer
	tasks   *tasks
	done    bool
	fired   chan struct{}
}

func newIdleWatch(after time.Duration, t *tasks) *idleWatch {
	return &idleWatch{clients: map[uint64]bool{}, after: after, tasks: t, fired: make(chan struct{})}
}

func (w *idleWatch) connected(cid uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.clients[cid] = true
	w.armLocked()
}

func (w *idleWatch) disconnected(cid uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.clients, cid)
	w.armLocked()
}

// arm starts the idle timer when no client is connected.
func (w *idleWatch) arm() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armLocked()
}

// armLocked starts the idle timer when no client is connected and stops it
// otherwise.
func (w *idleWatch) armLocked() {
	if w.after <= 0 || w.done {
		return
	}
	if len(w.clients) > 0 {
		w.timer.Stop()
		w.timer = nil
		return
	}
	if w.timer != nil {
		return
	}
	w.timer = w.tasks.After(w.after, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.timer = nil
		if len(w.clients) == 0 && !w.done {
			w.done = true
			close(w.fired)
		}
	})
}

// count is the number of client connections (stats).
func (w *idleWatch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.clients)
}
