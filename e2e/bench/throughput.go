package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

func benchPipelined(ctx context.Context, h *procOwner, cfg config, r *Results) error {
	rate, cpu, err := flood(ctx, h, cfg, "pipelined", 1, cfg.PipelineN, cfg.PipelineDepth)
	if err != nil {
		return err
	}
	r.val(rowPipelined, unitMsgPerSec, rate)
	r.val(rowPipelinedCPU, "us CPU", cpu)
	return nil
}

func benchFanin(ctx context.Context, h *procOwner, cfg config, r *Results) error {
	rate, cpu, client, err := floodClients(ctx, h, cfg, "fanin", cfg.FaninSenders, cfg.FaninPer, cfg.FaninDepth)
	if err != nil {
		return err
	}
	r.val(rowFanin, unitMsgPerSec, rate)
	r.val(rowFaninCPU, "us CPU", cpu)
	r.val(rowFaninClientCPU, "us CPU", client)
	return nil
}

func benchFaninSerial(ctx context.Context, h *procOwner, cfg config, r *Results) error {
	rate, _, err := flood(ctx, h, cfg, "fanin-serial", cfg.FaninSenders, cfg.SerialFaninPer, 1)
	if err != nil {
		return err
	}
	r.val(rowFaninSer, unitMsgPerSec, rate)
	return nil
}

// flood runs senders sessions, each on its own connection with depth sends
// in flight, sending per messages each to one holder, and returns messages
// per second from the first send until every message is delivered and
// acked, and the broker's CPU time per message (send and ack) meanwhile;
// then it checks exactly-once delivery.
func flood(ctx context.Context, h *procOwner, cfg config, name string, senders, per, depth int) (float64, float64, error) {
	rate, cpu, _, err := floodClients(ctx, h, cfg, name, senders, per, depth)
	return rate, cpu, err
}

// floodClients is flood that also returns this process's CPU time per
// message (the clients': senders and holder).
func floodClients(ctx context.Context, h *procOwner, cfg config, name string, senders, per, depth int) (float64, float64, float64, error) {
	b, err := h.startBroker(ctx, name)
	if err != nil {
		return 0, 0, 0, err
	}
	defer b.Stop()
	cb, err := b.Connect(ctx, "sink")
	if err != nil {
		return 0, 0, 0, err
	}
	defer cb.Close()
	sink, err := cb.Attach(ctx, intercom.AttachOptions{Name: "sink"})
	if err != nil {
		return 0, 0, 0, err
	}
	type sender struct {
		c  *intercom.Client
		id string
	}
	ss := make([]sender, senders)
	for k := range ss {
		c, err := b.Connect(ctx, fmt.Sprintf("s%02d", k))
		if err != nil {
			return 0, 0, 0, err
		}
		defer c.Close()
		s, err := c.Attach(ctx, intercom.AttachOptions{Name: fmt.Sprintf("s%02d", k), NoDeliver: true})
		if err != nil {
			return 0, 0, 0, err
		}
		ss[k] = sender{c, s.ID()}
	}
	total := senders * per
	rcv := newReceiver(cb, sink, total)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rcv.start(rctx)
	sent := newSentIDs(total)
	cpu0, err := b.CPU()
	if err != nil {
		return 0, 0, 0, err
	}
	self0, err := selfCPU()
	if err != nil {
		return 0, 0, 0, err
	}
	mk := text
	if cfg.Prose {
		mk = proseText
	}
	start := time.Now()
	err = pipelinedAsync(ctx, senders, per, depth, func(k, idx int) (*intercom.SendFuture, error) {
		return ss[k].c.SendAsync(wire.SendRequest{From: ss[k].id, To: "sink", Text: mk(idx, cfg.TextBytes), Lean: true})
	}, sent.add)
	if err != nil {
		return 0, 0, 0, err
	}
	if err := rcv.waitAcked(ctx, cfg.StepTimeout); err != nil {
		return 0, 0, 0, err
	}
	elapsed := time.Since(start)
	cpu1, err := b.CPU()
	if err != nil {
		return 0, 0, 0, err
	}
	self1, err := selfCPU()
	if err != nil {
		return 0, 0, 0, err
	}
	if err := errors.Join(sent.check(), rcv.verify(ctx, sent.ids)); err != nil {
		return 0, 0, 0, err
	}
	perMsg := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) / float64(total) }
	return float64(total) / elapsed.Seconds(), perMsg(cpu1 - cpu0), perMsg(self1 - self0), nil
}

// pipelined runs send for per messages of each of senders senders, depth
// at a time per sender (message idx = k*per + j), and returns the first
// error.
func pipelined(ctx context.Context, senders, per, depth int, send func(k, idx int) error) error {
	var wg sync.WaitGroup
	var firstErr firstError
	for k := range senders {
		var next atomic.Int64
		for range depth {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					j := int(next.Add(1) - 1)
					if j >= per || ctx.Err() != nil {
						return
					}
					if err := send(k, k*per+j); err != nil {
						firstErr.set(fmt.Errorf("send %d: %w", k*per+j, err))
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	return firstErr.get()
}

// pipelinedAsync runs per messages of each of senders senders, each sender
// one goroutine publishing its sends in order (message idx = k*per + j)
// with up to depth answers outstanding (SendAsync), the oldest awaited
// first; done gets every answer. It returns the first error.
func pipelinedAsync(ctx context.Context, senders, per, depth int, send func(k, idx int) (*intercom.SendFuture, error), done func(rep wire.SendReply, idx int)) error {
	var wg sync.WaitGroup
	var firstErr firstError
	for k := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			type inFlight struct {
				f   *intercom.SendFuture
				idx int
			}
			window := make([]inFlight, 0, depth)
			settle := func() bool {
				w := window[0]
				window = window[1:]
				rep, err := w.f.Wait(ctx)
				if err != nil {
					firstErr.set(fmt.Errorf("send %d: %w", w.idx, err))
					return false
				}
				done(rep, w.idx)
				return true
			}
			for j := 0; j < per && ctx.Err() == nil; j++ {
				if len(window) == depth && !settle() {
					return
				}
				f, err := send(k, k*per+j)
				if err != nil {
					firstErr.set(fmt.Errorf("send %d: %w", k*per+j, err))
					return
				}
				window = append(window, inFlight{f, k*per + j})
			}
			for len(window) > 0 && settle() {
			}
		}()
	}
	wg.Wait()
	return firstErr.get()
}

// firstError keeps the first of concurrent errors.
type firstError struct {
	mu  sync.Mutex
	err error
}

func (f *firstError) set(err error) {
	f.mu.Lock()
	if f.err == nil {
		f.err = err
	}
	f.mu.Unlock()
}

func (f *firstError) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}
