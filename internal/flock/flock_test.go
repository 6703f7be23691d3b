package flock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestAcquireIsExclusiveAndEndsWithItsHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	first, err := Acquire(t.Context(), path, time.Second, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("lock file mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	// Held: a second taker gives up after its wait, saying the lock is busy.
	if _, err := Acquire(t.Context(), path, 20*time.Millisecond, time.Millisecond); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatalf("second Acquire while held: %v, want EWOULDBLOCK", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Acquire(ctx, path, time.Minute, time.Millisecond); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire with a cancelled context: %v", err)
	}
	// Released: a waiting taker gets it.
	got := make(chan error, 1)
	go func() {
		f, err := Acquire(t.Context(), path, time.Minute, time.Millisecond)
		if err == nil {
			f.Close()
		}
		got <- err
	}()
	first.Close()
	if err := <-got; err != nil {
		t.Fatalf("Acquire after release: %v", err)
	}
}

func TestLockWaitsForTheHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	first, err := Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Acquire(t.Context(), path, 0, 0); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatalf("Acquire without waiting while Lock holds: %v, want EWOULDBLOCK", err)
	}
	got := make(chan error, 1)
	go func() {
		f, err := Lock(path)
		if err == nil {
			f.Close()
		}
		got <- err
	}()
	first.Close()
	if err := <-got; err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
}

func TestLockAndAcquireNameAnUnopenablePath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing-dir", "x.lock")
	for name, take := range map[string]func() (*os.File, error){
		"Lock":    func() (*os.File, error) { return Lock(path) },
		"Acquire": func() (*os.File, error) { return Acquire(t.Context(), path, time.Second, time.Millisecond) },
	} {
		if f, err := take(); err == nil || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "open lock "+path) {
			if f != nil {
				f.Close()
			}
			t.Errorf("%s in a missing directory: %v, want an error naming the lock file", name, err)
		}
	}
}
