package broker

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Start and Close: Close answers what it accepted, waits for every
// goroutine the broker started, and leaves nothing behind.

// TestCloseLeavesNoGoroutine runs a broker through every kind of goroutine
// and timer it starts (a holder's flush, an ask's timeout, a wait for mail,
// a held replace-mode message, a detached session's save, the sweep, the
// idle timer, the store watch, the trace writer) and checks that none
// outlives Close. It is not parallel: goleak sees the whole process.
func TestCloseLeavesNoGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	h := newHome(t)
	o := Options{Layout: h.layout, Logger: slog.New(slog.DiscardHandler), IdleExit: time.Hour, ForgetAfter: time.Hour}
	b, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	c, err := intercom.Connect(ctx, intercom.Options{Home: h.home, NoSpawn: true, Timeout: bounded})
	if err != nil {
		t.Fatal(err)
	}
	w := &world{testHome: h, b: b, c: c}
	a, z := w.attach("alpha"), w.attach("zulu")
	w.send(a, "zulu", "first")
	m := recv(t, z)
	if err := z.Ack(ctx, m.ID); err != nil {
		t.Fatal(err)
	}
	w.send(a, "zulu", "coalesced", func(r *wire.SendRequest) {
		r.Delivery, r.QueueMode, r.Thread = wire.DeliveryQueue, "replace", "t"
	})
	// An ask left waiting, and a wait for mail left open.
	asked := make(chan error, 1)
	go func() {
		_, err := c.Ask(ctx, wire.SendRequest{From: a.ID(), To: "zulu", Text: "still there?"}, time.Hour)
		asked <- err
	}()
	eventually(t, "the ask is pending", func() bool {
		p, err := c.Pending(ctx, z.ID())
		return err == nil && len(p) == 1
	})
	waited := make(chan error, 1)
	go func() {
		_, err := c.InboxWait(ctx, a.ID(), time.Hour, true)
		waited <- err
	}()
	eventually(t, "the wait is registered", func() bool { return b.waiters.count() == 1 })
	if err := z.Detach(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-asked; err == nil {
		t.Fatal("an ask to a session that detached ended without an error")
	}
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	c.Close()
	if err := <-waited; err == nil {
		t.Fatal("a wait for mail ended without error when its broker and client closed")
	}
	if _, err := os.Stat(h.layout.SocketDir()); !os.IsNotExist(err) {
		t.Fatalf("socket directory left after Close: %v", err)
	}
	if _, err := os.Stat(h.layout.PidFile()); !os.IsNotExist(err) {
		t.Fatalf("pid file left after Close: %v", err)
	}
}

func TestCloseIsIdempotent(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	if err := w.b.Close(); err != nil {
		t.Fatalf("first Close: %v", err)
	}
	if err := w.b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestSecondBrokerOnAHomeRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	_, err := Start(Options{Layout: w.layout, Logger: slog.New(slog.DiscardHandler)})
	if !errors.Is(err, ErrAlreadyRunning) {
		t.Fatalf("second Start: %v, want ErrAlreadyRunning", err)
	}
	if err := w.c.Ping(t.Context()); err != nil {
		t.Fatalf("the first broker stopped answering: %v", err)
	}
}

func TestRunStopsOnCancelAndOnIdle(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	ctx, cancel := context.WithCancel(t.Context())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Layout: h.layout, Logger: slog.New(slog.DiscardHandler), Ready: func() { close(ready) }})
	}()
	awaitReady(t, ready, done)
	c := h.client()
	if err := c.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
	// With no client at all, a broker with IdleExit stops by itself.
	c.Close()
	if err := Run(t.Context(), Options{Layout: h.layout, Logger: slog.New(slog.DiscardHandler), IdleExit: 50 * time.Millisecond}); err != nil {
		t.Fatalf("Run idling out: %v", err)
	}
}

// A broker whose store directory disappears stops on its own and says why.
func TestRunStopsWhenTheStoreFails(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Run(t.Context(), Options{Layout: h.layout, Logger: slog.New(slog.DiscardHandler), Ready: func() { close(ready) }})
	}()
	awaitReady(t, ready, done)
	if err := os.RemoveAll(h.layout.DBDir()); err != nil {
		t.Fatal(err)
	}
	err := <-done
	if !errors.Is(err, ErrStoreUnavailable) {
		t.Fatalf("Run with its store deleted: %v, want ErrStoreUnavailable", err)
	}
	if _, err := os.Stat(h.layout.SocketDir()); !os.IsNotExist(err) {
		t.Fatalf("socket directory left by a broker whose store failed: %v", err)
	}
}

// A send into a failed store is refused as store_unavailable, not accepted.
func TestSendIntoFailedStoreRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a, z := w.attach("a"), w.attach("z")
	w.b.storeFailed(errors.New("disk on fire"))
	_, err := w.c.Send(t.Context(), wire.SendRequest{From: a.ID(), To: z.ID(), Text: "lost?"})
	wantCode(t, "send into a failed store", err, wire.CodeStoreUnavailable)
	if err := w.b.Close(); !errors.Is(err, ErrStoreUnavailable) {
		t.Fatalf("Close of a broker whose store failed: %v, want ErrStoreUnavailable", err)
	}
}

// awaitReady waits for Run to call Ready, failing if it returns first.
func awaitReady(t *testing.T, ready <-chan struct{}, done <-chan error) {
	t.Helper()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("Run returned before it was ready: %v", err)
	}
}
