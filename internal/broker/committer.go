package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// op is one unit of durable work. apply runs inside a batch transaction;
// after runs once the batch is on disk (err nil) or has failed.
type op struct {
	apply func(*store.Txn) error
	after func(err error)
	size  int // bytes it writes, about (the request's size)
	// linger: this op may wait a moment for company. A batch of only such
	// ops (acks) waits up to lingerFor for another op to share its fsync, so
	// that the next send is not queued behind a separate fsync for an ack.
	linger bool
}

const lingerFor = 400 * time.Microsecond

// committer applies ops in arrival order, many per fsync'd transaction (group
// commit): while one batch is being synced the next one accumulates.
type committer struct {
	st   *store.Store
	log  *slog.Logger
	in   chan op
	done chan struct{}
	once sync.Once
	low  atomic.Bool // the last batch was refused for lack of space
	// inflight is the batch being written now; unavailable is told when a
	// write finds the store unavailable.
	inflight    atomic.Pointer[[]op]
	unavailable func(error)
	stopMu      sync.RWMutex
	stopped     bool // Close was called: Submit drops ops
}

// lowSpace reports whether the disk was too full for the last batch.
func (c *committer) lowSpace() bool { return c.low.Load() }

// A batch holds at most maxBatch ops and, unless it is a single op,
// maxBatchBytes: the free-space check below covers a whole batch.
const (
	maxBatch      = 512
	maxBatchBytes = 2 << 20 // under Badger's own limit (15% of the 16 MiB memtable)
)

func newCommitter(st *store.Store, log *slog.Logger, unavailable func(error)) *committer {
	c := &committer{st: st, log: log, in: make(chan op, 4096), done: make(chan struct{}), unavailable: unavailable}
	go c.loop()
	return c
}

// Submit queues an op. Its after runs exactly once, by the loop or by
// fail. After Close the op is dropped unanswered: the broker is stopping,
// and its clients retry the request against the next one.
func (c *committer) Submit(o op) {
	after, once := o.after, sync.Once{}
	o.after = func(err error) { once.Do(func() { after(err) }) }
	c.stopMu.RLock()
	defer c.stopMu.RUnlock()
	if !c.stopped {
		c.in <- o
	}
}

// fail answers the batch being written and every queued op with the store's
// error at once, without waiting for the loop: a write into a failed store
// may never return (Badger blocks writes while it cannot flush).
func (c *committer) fail(err error) {
	err = classify(err)
	if batch := c.inflight.Load(); batch != nil {
		for _, o := range *batch {
			o.after(err)
		}
	}
	go func() {
		for o := range c.in {
			o.after(err)
		}
	}()
}

func (c *committer) loop() {
	defer close(c.done)
	batch := make([]op, 0, maxBatch)
	var carry *op // taken from the queue but too big for the batch before
	for {
		var o op
		if carry != nil {
			o, carry = *carry, nil
		} else {
			var ok bool
			if o, ok = <-c.in; !ok {
				return
			}
		}
		batch = append(batch[:0], o)
		bytes, lingering := o.size, o.linger
		var wait <-chan time.Time
		for len(batch) < maxBatch {
			next, ok, got := op{}, true, false
			select {
			case next, ok = <-c.in:
				got = true
			default:
			}
			if !got && lingering { // only acks so far: wait a moment for a send
				if wait == nil {
					wait = time.After(lingerFor)
				}
				select {
				case next, ok = <-c.in:
					got = true
				case <-wait:
				}
			}
			if !got || !ok {
				break
			}
			if bytes+next.size > maxBatchBytes {
				carry = &next
				break
			}
			batch = append(batch, next)
			bytes += next.size
			lingering = lingering && next.linger
		}
		c.run(batch)
	}
}

func (c *committer) run(batch []op) {
	if err := c.st.Err(); err != nil {
		for _, o := range batch {
			o.after(classify(err))
		}
		return
	}
	// Disk (nearly) full: refuse before Badger writes into its mmap'd WAL,
	// where running out of space is a fatal SIGBUS rather than an error.
	need := 0
	for _, o := range batch {
		need += o.size
	}
	if err := c.st.CheckSpace(int64(need)); err != nil {
		c.low.Store(true)
		c.log.Warn("refusing writes", "err", err)
		for _, o := range batch {
			o.after(classify(err))
		}
		return
	}
	errs := make([]error, len(batch))
	apply := func(txn *store.Txn) error {
		for i, o := range batch {
			errs[i] = o.apply(txn)
			if errs[i] != nil && !isOpError(errs[i]) {
				return errs[i]
			}
		}
		return nil
	}
	c.inflight.Store(&batch)
	defer c.inflight.Store(nil)
	err := c.st.Update(apply)
	// A concurrent transaction (the other committer, a registration) wrote
	// a key this batch read: apply it again on the new state.
	for try := 0; errors.Is(err, badger.ErrConflict) && try < 100; try++ {
		err = c.st.Update(apply)
	}
	if err == nil {
		c.low.Store(false)
	}
	if errors.Is(err, store.ErrUnavailable) {
		c.unavailable(err)
		for _, o := range batch {
			o.after(classify(err))
		}
		return
	}
	if err != nil && len(batch) > 1 {
		// One op spoiled the batch (too big, disk trouble): retry singly so the
		// others are not failed for it.
		for _, o := range batch {
			c.run([]op{o})
		}
		return
	}
	for i, o := range batch {
		e := errs[i]
		if err != nil {
			e = classify(err)
		}
		o.after(e)
	}
}

// opError is a validation failure inside apply that must not abort the batch.
type opError struct{ err error }

func (e opError) Error() string { return e.err.Error() }
func (e opError) Unwrap() error { return e.err }

func isOpError(err error) bool {
	var oe opError
	return errors.As(err, &oe)
}

// classify turns a store error into the error a client is answered with.
func classify(err error) error {
	var we *wire.Error
	if errors.As(err, &we) {
		return we
	}
	if errors.Is(err, store.ErrUnavailable) {
		return unavailableReply(err)
	}
	if errors.Is(err, syscall.ENOSPC) {
		return wire.Errorf(wire.CodeNoSpace, "store message: no space left on device")
	}
	if errors.Is(err, badger.ErrTxnTooBig) {
		return wire.Errorf(wire.CodeTooLarge, "store message: transaction too big")
	}
	return fmt.Errorf("store: %w", err)
}

// unavailableReply is the answer to a request the store could not take.
func unavailableReply(err error) *wire.Error {
	return wire.Errorf(wire.CodeStoreUnavailable, "%v: the broker is stopping, and this request may not have been stored", err)
}

// Close drains queued ops and stops the loop.
func (c *committer) Close() {
	c.once.Do(func() {
		c.stopMu.Lock()
		c.stopped = true
		close(c.in)
		c.stopMu.Unlock()
		<-c.done
	})
}
