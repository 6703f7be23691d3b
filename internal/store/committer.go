package store

import (
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Op is one unit of durable work. Apply runs inside a batch transaction;
// After runs once the batch is on disk (err nil) or has failed.
type Op struct {
	Apply func(*Txn) error
	After func(err error)
	Size  int // bytes it writes, about (the request's size)
	// Linger: this op may wait a moment for company. A batch of only such
	// ops (acks) waits up to lingerFor for another op to share its fsync, so
	// that the next send is not queued behind a separate fsync for an ack.
	Linger bool
}

const lingerFor = 400 * time.Microsecond

// CommitterOptions configure a Committer.
type CommitterOptions struct {
	Log *slog.Logger
	// Unavailable is told when a write finds the store unavailable.
	Unavailable func(error)
	// Errors maps a failure before an op's After sees it (to the answer a
	// client gets); nil passes failures on as they are.
	Errors func(error) error
	// AfterBatch runs, in the committer's goroutine, once the After of
	// every op of a batch has run: the broker sends the answers those
	// queued together (its batched send replies).
	AfterBatch func()
	// Applied runs, in the committer's goroutine, each time a batch's ops
	// were applied (or one of them failed), before the batch is committed:
	// the broker announces then what the ops stored for its bridge
	// together, in op order.
	Applied func()
}

// Committer applies ops in arrival order, many per fsync'd transaction
// (group commit): while one batch is being synced the next one
// accumulates.
type Committer struct {
	st   *Store
	opts CommitterOptions
	in   chan Op
	done chan struct{}
	once sync.Once
	low  atomic.Bool // the last batch was refused for lack of space
	// inflight is the batch being written now.
	inflight atomic.Pointer[[]Op]
	stopMu   sync.RWMutex
	stopped  bool // Close was called: Submit drops ops
}

// LowSpace reports whether the disk was too full for the last batch.
func (c *Committer) LowSpace() bool { return c.low.Load() }

// A batch holds at most maxBatch ops and, unless it is a single op,
// maxBatchBytes: the free-space check below covers a whole batch.
const (
	maxBatch      = 512
	maxBatchBytes = 2 << 20 // under Badger's own limit (15% of the 16 MiB memtable)
)

// NewCommitter starts a committer writing into st; Close stops it.
func NewCommitter(st *Store, opts CommitterOptions) *Committer {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Unavailable == nil {
		opts.Unavailable = func(error) {}
	}
	if opts.Errors == nil {
		opts.Errors = func(err error) error { return err }
	}
	if opts.AfterBatch == nil {
		opts.AfterBatch = func() {}
	}
	c := &Committer{st: st, opts: opts, in: make(chan Op, 4096), done: make(chan struct{})}
	go c.loop()
	return c
}

// Submit queues an op. Its After runs exactly once, by the loop or by
// Fail. After Close the op is dropped unanswered: the broker is stopping,
// and its clients retry the request against the next one.
func (c *Committer) Submit(o Op) {
	after, once := o.After, sync.Once{}
	o.After = func(err error) { once.Do(func() { after(err) }) }
	c.stopMu.RLock()
	defer c.stopMu.RUnlock()
	if !c.stopped {
		c.in <- o
	}
}

// Wait runs apply through the committer and waits for its commit.
func (c *Committer) Wait(apply func(*Txn) error) error {
	done := make(chan error, 1)
	c.Submit(Op{Apply: apply, After: func(err error) { done <- err }})
	return <-done
}

// Fail answers the batch being written and every queued op with the store's
// error at once, without waiting for the loop: a write into a failed store
// may never return (Badger blocks writes while it cannot flush).
func (c *Committer) Fail(err error) {
	err = c.opts.Errors(err)
	if batch := c.inflight.Load(); batch != nil {
		for _, o := range *batch {
			o.After(err)
		}
	}
	go func() {
		for o := range c.in {
			o.After(err)
		}
	}()
}

func (c *Committer) loop() {
	defer close(c.done)
	batch := make([]Op, 0, maxBatch)
	var carry *Op // taken from the queue but too big for the batch before
	for {
		var o Op
		if carry != nil {
			o, carry = *carry, nil
		} else {
			var ok bool
			if o, ok = <-c.in; !ok {
				return
			}
		}
		batch = append(batch[:0], o)
		bytes, lingering := o.Size, o.Linger
		var wait <-chan time.Time
		for len(batch) < maxBatch {
			next, ok, got := Op{}, true, false
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
			if bytes+next.Size > maxBatchBytes {
				carry = &next
				break
			}
			batch = append(batch, next)
			bytes += next.Size
			lingering = lingering && next.Linger
		}
		c.run(batch)
		c.opts.AfterBatch()
	}
}

// failAll answers every op of batch with err.
func (c *Committer) failAll(batch []Op, err error) {
	err = c.opts.Errors(err)
	for _, o := range batch {
		o.After(err)
	}
}

func (c *Committer) run(batch []Op) {
	if err := c.st.Err(); err != nil {
		c.failAll(batch, err)
		return
	}
	// Disk (nearly) full: refuse before Badger writes into its mmap'd WAL,
	// where running out of space is a fatal SIGBUS rather than an error.
	need := 0
	for _, o := range batch {
		need += o.Size
	}
	if err := c.st.CheckSpace(int64(need)); err != nil {
		c.low.Store(true)
		c.opts.Log.Warn("refusing writes", "err", err)
		c.failAll(batch, err)
		return
	}
	errs := make([]error, len(batch))
	apply := func(txn *Txn) error {
		if c.opts.Applied != nil {
			defer c.opts.Applied()
		}
		for i, o := range batch {
			errs[i] = o.Apply(txn)
			if errs[i] != nil && !IsRefused(errs[i]) {
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
	for try := 0; errors.Is(err, errConflict) && try < 100; try++ {
		err = c.st.Update(apply)
	}
	if err == nil {
		c.low.Store(false)
	}
	if errors.Is(err, ErrUnavailable) {
		c.opts.Unavailable(err)
		c.failAll(batch, err)
		return
	}
	if err != nil && len(batch) > 1 {
		// One op spoiled the batch (too big, disk trouble): retry singly so the
		// others are not failed for it.
		for _, o := range batch {
			c.run([]Op{o})
		}
		return
	}
	if err != nil {
		c.failAll(batch, err)
		return
	}
	for i, o := range batch {
		if errs[i] != nil {
			o.After(c.opts.Errors(errs[i]))
		} else {
			o.After(nil)
		}
	}
}

// Refuse marks err as the refusal of one op inside Apply (a validation that
// needed the store): the op fails with it and the rest of its batch commits.
// Any other error from Apply aborts the whole batch.
func Refuse(err error) error { return refusal{err} }

// IsRefused reports whether err came from Refuse.
func IsRefused(err error) bool {
	var r refusal
	return errors.As(err, &r)
}

type refusal struct{ err error }

func (e refusal) Error() string { return e.err.Error() }
func (e refusal) Unwrap() error { return e.err }

// Close drains queued ops and stops the loop. It is idempotent.
func (c *Committer) Close() {
	c.once.Do(func() {
		c.stopMu.Lock()
		c.stopped = true
		close(c.in)
		c.stopMu.Unlock()
		<-c.done
	})
}
