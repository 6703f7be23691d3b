package broker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/intercom-dev/intercom/internal/paths"
	"github.com/intercom-dev/intercom/internal/pidfile"
)

// errShutdownTimeout is joined into Close's error when the shutdown did not
// finish within shutdownWait.
var errShutdownTimeout = errors.New("shutdown did not finish in time")

// Close shuts the broker down, in this order: no new connections; the
// requests received are handled and answered (the subscriptions drain, the
// last handler returns); timers are cancelled and every goroutine the
// broker started ends; the committer writes and answers what is queued;
// NATS stops (flushing replies to clients); the store is closed; socket and
// pid file are removed. Whatever the store is doing, it returns within
// shutdownWait (a write or flush into a failing disk may never end;
// everything accepted is already in Badger's write-ahead log). It returns
// the store's failure (wrapping ErrStoreUnavailable) if it had one, and
// what went wrong closing; it is idempotent.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		go func() {
			defer close(b.closeDone)
			b.closeErr = b.shutdown()
		}()
	})
	select {
	case <-b.closeDone:
		return b.closeErr
	case <-time.After(shutdownWait):
		b.log.Warn("shutdown did not finish in time; exiting without closing the store (everything accepted is in its write-ahead log)", "waited", shutdownWait)
		b.release()
		return errors.Join(b.storeErr(), fmt.Errorf("close broker: %w after %s", errShutdownTimeout, shutdownWait))
	}
}

// storeErr is the store's failure, if any.
func (b *Broker) storeErr() error {
	if b.st == nil {
		return nil
	}
	return b.st.Err()
}

func (b *Broker) shutdown() error {
	if b.gw != nil {
		b.gw.StopAccepting()
	}
	b.drainRequests()
	b.tasks.stop()
	b.tasks.wait()
	b.traces.stopWriter() // it submits to the committer
	if b.cmt != nil {
		b.cmt.Close()
	}
	if b.nc != nil {
		_ = b.nc.FlushTimeout(time.Second) // answers reach the server before it stops
	}
	if b.srv != nil {
		b.srv.Shutdown() // flushes what clients were sent, then closes them
		b.srv.WaitForShutdown()
	}
	if b.gw != nil {
		b.gw.Close()
		<-b.gwDone
	}
	if b.nc != nil {
		b.nc.Close()
	}
	var closeErr error
	if b.st != nil {
		closeErr = b.closeStore()
	}
	// Our private socket directory goes with us once we served on it (so it
	// was checked to be ours); a directory named by INTERCOM_SOCKET is the
	// user's and stays. A non-empty one stays too.
	if l := b.opts.Layout; b.lock != nil && b.gw != nil && l.SocketDir() == paths.SocketDirFor(l.Home) {
		if err := os.Remove(l.SocketDir()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			b.log.Debug("keep socket directory", "dir", l.SocketDir(), "err", err)
		}
	}
	b.release()
	if closeErr != nil {
		closeErr = fmt.Errorf("close store: %w", closeErr)
	}
	return errors.Join(b.storeErr(), closeErr)
}

// release removes the pid file and drops the broker lock, once.
func (b *Broker) release() {
	b.releaseOnce.Do(func() {
		if b.lock != nil {
			pidfile.Remove(b.opts.Layout.PidFile())
			b.lock.Close()
		}
	})
}
