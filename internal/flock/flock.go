// Package flock takes exclusive advisory locks on files (flock(2)). A lock
// ends with the process that holds it, so a holder that crashed never
// blocks the next one: there is no stale lock to break.
package flock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/intercom-dev/intercom/internal/plainfile"
)

// Acquire takes the exclusive lock on path (created, mode 0600, when
// missing), trying every poll until it holds it, wait has passed or ctx
// ends (then ctx's error). Closing the returned file releases the lock; the
// holder may write into it.
func Acquire(ctx context.Context, path string, wait, poll time.Duration) (*os.File, error) {
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			return nil, failed(f, path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(poll):
		}
	}
}

// Lock takes the exclusive lock on path (created, mode 0600, when missing),
// waiting for as long as another process holds it. Closing the returned file
// releases the lock.
func Lock(path string) (*os.File, error) {
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return nil, failed(f, path, err)
	}
	return f, nil
}

// open opens (creating, mode 0600) the lock file at path.
func open(path string) (*os.File, error) {
	f, err := plainfile.Open(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	return f, nil
}

// failed closes lock file f, which could not be locked, and says why.
func failed(f *os.File, path string, err error) error {
	f.Close()
	return fmt.Errorf("lock %s: %w", path, err)
}
