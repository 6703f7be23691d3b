package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/intercom-dev/intercom/internal/paths"
	"github.com/intercom-dev/intercom/pkg/intercom"
)

// benchColdStart: with no broker running, time from intercom.Connect (which
// auto-spawns the broker binary) until the first session is registered;
// median of ColdN runs, on a new home each time and on one existing home
// whose broker had stopped (the usual case after an idle exit).
func benchColdStart(ctx context.Context, h *procOwner, cfg config, r *Results) error {
	fresh := make([]time.Duration, 0, cfg.ColdN)
	for i := range cfg.ColdN {
		d, err := coldOnce(ctx, h, filepath.Join(h.root, fmt.Sprintf("cold-new-%d", i)))
		if err != nil {
			return fmt.Errorf("new home %d: %w", i, err)
		}
		fresh = append(fresh, d)
	}
	home := filepath.Join(h.root, "cold-existing")
	existing := make([]time.Duration, 0, cfg.ColdN)
	for i := -1; i < cfg.ColdN; i++ { // run -1 creates the home
		d, err := coldOnce(ctx, h, home)
		if err != nil {
			return fmt.Errorf("existing home %d: %w", i, err)
		}
		if i >= 0 {
			existing = append(existing, d)
		}
	}
	// The broker's own share: exec until its socket accepts (polled every
	// millisecond), on an existing home.
	up := make([]time.Duration, 0, cfg.ColdN)
	for i := -1; i < cfg.ColdN; i++ { // run -1 creates the home
		b, err := h.startBroker(ctx, "cold-direct")
		if err != nil {
			return err
		}
		b.Stop()
		if i >= 0 {
			up = append(up, b.up)
		}
	}
	r.val(rowColdFresh, "ms", float64(median(fresh))/float64(time.Millisecond))
	r.val(rowColdExist, "ms", float64(median(existing))/float64(time.Millisecond))
	r.val(rowBrokerUp, "ms", float64(median(up))/float64(time.Millisecond))
	return nil
}

func coldOnce(ctx context.Context, h *procOwner, home string) (time.Duration, error) {
	l, err := paths.Resolve(home, "")
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return 0, err
	}
	// A spawned broker that escaped us would still exit 2 s after its last
	// client.
	opts := intercom.Options{Home: home, BrokerCommand: h.bin, BrokerArgs: []string{"--idle-exit=2s"}, Timeout: 30 * time.Second, Name: "cold"}
	t0 := time.Now()
	c, err := intercom.Connect(ctx, opts)
	if err != nil {
		return 0, err
	}
	_, err = c.Attach(ctx, intercom.AttachOptions{Name: "cold"})
	d := time.Since(t0)
	c.Close() // first, or it would reconnect and spawn again
	p, perr := h.adoptSpawned(l)
	if perr != nil {
		return 0, perr
	}
	h.stop(p, 10*time.Second)
	if err != nil {
		return 0, err
	}
	return d, nil
}

// benchIdle: the broker's CPU time (utime+stime) over IdleFor with
// IdleSessions attached holders that do nothing, scaled to 10 s.
func benchIdle(ctx context.Context, h *procOwner, cfg config, r *Results) error {
	b, err := h.startBroker(ctx, "idle")
	if err != nil {
		return err
	}
	defer b.Stop()
	const nClients = 4
	for k := range nClients {
		c, err := b.Connect(ctx, fmt.Sprintf("idle-%d", k))
		if err != nil {
			return err
		}
		defer c.Close()
		for i := k; i < cfg.IdleSessions; i += nClients {
			if _, err := c.Attach(ctx, intercom.AttachOptions{Name: fmt.Sprintf("i%04d", i)}); err != nil {
				return err
			}
		}
	}
	if err := sleepCtx(ctx, min(time.Second, cfg.IdleFor)); err != nil { // let registration work finish
		return err
	}
	c0, err := b.CPU()
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := sleepCtx(ctx, cfg.IdleFor); err != nil {
		return err
	}
	c1, err := b.CPU()
	if err != nil {
		return err
	}
	window := time.Since(t0)
	rss, err := b.RSS()
	if err != nil {
		return err
	}
	r.val(rowIdleCPU, "ms CPU per 10 s", float64(c1-c0)/float64(time.Millisecond)*float64(10*time.Second)/float64(window))
	r.val(rowIdleRSS, "MiB", rss)
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
