package main

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// benchPresence attaches N holder sessions from a few pkg clients in this
// process (many sessions share one connection), then times `list --scope
// all` from another client and reads the broker's RSS.
func benchPresence(ctx context.Context, h *procOwner, cfg config, r *Results) error {
	for _, pc := range cfg.Presence {
		if err := presenceCase1(ctx, h, cfg, pc, r); err != nil {
			return fmt.Errorf("%d sessions: %w", pc.Sessions, err)
		}
	}
	return nil
}

func presenceCase1(ctx context.Context, h *procOwner, cfg config, pc presenceCase, r *Results) error {
	name := fmt.Sprintf("presence-%d", pc.Sessions)
	if pc.LongNames {
		name += "-long"
	}
	b, err := h.startBroker(ctx, name)
	if err != nil {
		return err
	}
	defer b.Stop()
	nClients := max(1, min(20, pc.Sessions/500))
	clients := make([]*intercom.Client, nClients)
	for i := range clients {
		if clients[i], err = b.Connect(ctx, fmt.Sprintf("presence-%d", i)); err != nil {
			return err
		}
		defer clients[i].Close()
	}
	// Names shorter than 8 characters ("p00042") unless LongNames
	// ("agent-00042"): target assignment treats names of 8 or more
	// characters differently (they could be mistaken for id prefixes).
	nameOf := func(i int) string { return fmt.Sprintf("p%05d", i) }
	if pc.LongNames {
		nameOf = func(i int) string { return fmt.Sprintf("agent-%05d", i) }
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr firstError
	start := time.Now()
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= pc.Sessions || ctx.Err() != nil {
					return
				}
				c := clients[(i+w)%nClients]
				if _, err := c.Attach(ctx, intercom.AttachOptions{Name: nameOf(i)}); err != nil {
					firstErr.set(fmt.Errorf("attach %d: %w", i, err))
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := firstErr.get(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	attach := time.Since(start)

	obs, err := b.Connect(ctx, "observer")
	if err != nil {
		return err
	}
	defer obs.Close()
	rows, err := obs.List(ctx, intercom.ListOptions{Scope: "all"})
	if err != nil {
		return err
	}
	if len(rows) != pc.Sessions {
		return fmt.Errorf("list returned %d sessions, want %d", len(rows), pc.Sessions)
	}
	runtime.GC() // the attached sessions' buffers are large; settle before timing
	lists := make([]time.Duration, 0, pc.Lists)
	for range pc.Lists {
		t0 := time.Now()
		if _, err := obs.List(ctx, intercom.ListOptions{Scope: "all"}); err != nil {
			return err
		}
		lists = append(lists, time.Since(t0))
	}
	// The same request without the client's JSON decoding: the broker's
	// and the transport's share, and the size of the reply.
	req := mustJSON(wire.ListRequest{Scope: "all"})
	raws := make([]time.Duration, 0, pc.Lists)
	size := 0
	for range pc.Lists {
		t0 := time.Now()
		m, err := obs.Conn().Request(wire.SubjList, req, cfg.StepTimeout)
		if err != nil {
			return err
		}
		raws = append(raws, time.Since(t0))
		size = len(m.Data)
	}
	rss, err := b.RSS()
	if err != nil {
		return err
	}
	r.lat(rowList(pc.Sessions, pc.LongNames), "ms", lists)
	if !pc.LongNames {
		r.lat(rowListRaw(pc.Sessions), "ms", raws)
		r.val(rowListBytes(pc.Sessions), "KiB", float64(size)/1024)
	}
	r.val(rowRSS(pc.Sessions, pc.LongNames), "MiB", rss)
	r.val(rowAttach(pc.Sessions, pc.LongNames), "s", attach.Seconds())
	return nil
}
