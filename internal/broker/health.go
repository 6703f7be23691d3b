package broker

import (
	"time"

	"github.com/intercom-dev/intercom/internal/store"
)

// ErrStoreUnavailable is wrapped by Run's error when the broker stopped
// because its store could not be written (home deleted, database directory
// unwritable or read-only, I/O errors).
var ErrStoreUnavailable = store.ErrUnavailable

const (
	// storeProbeEvery is how often the store is checked for being writable
	// (besides every commit checking its directory) while it is written to;
	// storeProbeIdle when nothing was written since the last probe (a
	// write then brings the next probe within storeProbeEvery).
	storeProbeEvery = time.Second
	storeProbeIdle  = 5 * time.Second
	// shutdownWait bounds Close.
	shutdownWait = 5 * time.Second
	// failedCloseWait bounds closing a store that failed: Badger retries
	// its last flush forever when it cannot write.
	failedCloseWait = time.Second
)

// watchStore probes the store until the broker closes, and stops the broker
// when the store can no longer be written. Badger alone would retry a
// failing memtable flush forever while the broker went on accepting writes
// into files that may be gone.
func (b *Broker) watchStore() {
	t := time.NewTimer(storeProbeEvery)
	defer t.Stop()
	last := time.Now()        // of the last probe
	var quiet <-chan struct{} // set while nothing was written: wakes at the next write
	for {
		select {
		case <-b.tasks.Done():
			return
		case <-b.storeDown:
			return
		case <-quiet: // the first write after a quiet spell: probe soon
			quiet = nil
			t.Reset(max(0, storeProbeEvery-time.Since(last)))
			continue
		case <-t.C:
		}
		if err := b.st.Probe(); err != nil {
			b.storeFailed(err)
			return
		}
		last = time.Now()
		select {
		case <-b.st.Written(): // written since the last probe (one signal waits at most)
			quiet = nil
			t.Reset(storeProbeEvery)
		default:
			quiet = b.st.Written()
			t.Reset(storeProbeIdle)
		}
	}
}

// storeFailed marks the store unavailable, answers every waiting write with
// store_unavailable, logs why once and makes Run stop the broker.
func (b *Broker) storeFailed(err error) {
	b.storeDownOnce.Do(func() {
		b.st.Fail(err)
		err = b.st.Err()
		b.log.Error("store unavailable: stopping the broker", "err", err)
		if b.cmt != nil {
			b.cmt.Fail(err)
		}
		close(b.storeDown)
	})
}

// closeStore saves last-seen times and closes the store; a store that
// failed (or fails its probe now) is given failedCloseWait, and is left to
// the process's exit after that. It returns the error of closing a healthy
// store.
func (b *Broker) closeStore() error {
	if err := b.st.Probe(); err != nil && b.st.Err() == nil {
		b.storeFailed(err) // found at shutdown: a SIGTERM while the disk fails
	}
	if b.st.Err() == nil {
		b.persistLastSeen()
	}
	done := make(chan error, 1)
	go func() { done <- b.st.Close() }()
	if b.st.Err() == nil {
		err := <-done
		if err != nil {
			b.log.Warn("close store", "err", err)
		}
		return err
	}
	select {
	case <-done:
	case <-time.After(failedCloseWait):
	}
	return nil
}

// persistLastSeen saves every lasting session's record, connected ones
// seen now.
func (b *Broker) persistLastSeen() {
	recs := b.sessions.records()
	_ = b.st.Update(func(txn *store.Txn) error {
		for _, r := range recs {
			if err := txn.PutSession(r); err != nil {
				return err
			}
		}
		return nil
	})
}
