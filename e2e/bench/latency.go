package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// pair is a broker with two sessions on two connections, as two agent
// processes would hold them: alice sends, bob holds and receives.
type pair struct {
	b      *broker
	ca, cb *intercom.Client
	a, bob *intercom.Session
}

func newPair(ctx context.Context, h *procOwner, name string) (*pair, error) {
	b, err := h.startBroker(ctx, name)
	if err != nil {
		return nil, err
	}
	p := &pair{b: b}
	if p.ca, err = b.Connect(ctx, "alice"); err != nil {
		p.close()
		return nil, err
	}
	if p.cb, err = b.Connect(ctx, "bob"); err != nil {
		p.close()
		return nil, err
	}
	if p.a, err = p.ca.Attach(ctx, intercom.AttachOptions{Name: "alice", NoDeliver: true}); err != nil {
		p.close()
		return nil, err
	}
	if p.bob, err = p.cb.Attach(ctx, intercom.AttachOptions{Name: "bob"}); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

func (p *pair) close() {
	if p.ca != nil {
		p.ca.Close()
	}
	if p.cb != nil {
		p.cb.Close()
	}
	p.b.Stop()
}

// benchLatency: serial steer sends alice→bob; each send waits for its
// acceptance (durable) and for its arrival at bob's holder before the next.
// bob acks every message (batched, off the timed path).
func benchLatency(ctx context.Context, h *procOwner, cfg config, r *Results) error {
	p, err := newPair(ctx, h, "latency")
	if err != nil {
		return err
	}
	defer p.close()
	warm := max(10, cfg.LatencyN/20)
	total := warm + cfg.LatencyN
	rcv := newReceiver(p.cb, p.bob, total)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rcv.start(rctx)
	sent := newSentIDs(total)
	from := p.a.ID()
	accepted := make([]time.Duration, 0, cfg.LatencyN)
	delivered := make([]time.Duration, 0, cfg.LatencyN)
	var cpu0 time.Duration
	for i := 0; i < total; i++ {
		if i == warm {
			if cpu0, err = p.b.CPU(); err != nil {
				return err
			}
		}
		t0 := time.Now()
		rep, err := p.ca.Send(ctx, wire.SendRequest{From: from, To: "bob", Text: text(i, cfg.TextBytes)})
		t1 := time.Now()
		if err != nil {
			return fmt.Errorf("send %d: %w", i, err)
		}
		sent.add(rep, i)
		at, err := rcv.waitArrival(ctx, i, cfg.StepTimeout)
		if err != nil {
			return err
		}
		if i >= warm {
			accepted = append(accepted, t1.Sub(t0))
			delivered = append(delivered, at.Sub(t0))
		}
	}
	if err := rcv.waitAcked(ctx, cfg.StepTimeout); err != nil {
		return err
	}
	cpu1, err := p.b.CPU()
	if err != nil {
		return err
	}
	if err := errors.Join(sent.check(), rcv.verify(ctx, sent.ids)); err != nil {
		return err
	}
	r.lat(rowAccepted, "us", accepted)
	r.lat(rowDelivered, "us", delivered)
	r.val(rowLatencyCPU, "us CPU", float64(cpu1-cpu0)/float64(time.Microsecond)/float64(cfg.LatencyN))
	return nil
}

// benchAsk: serial asks alice→bob; bob's holder replies to each as soon as
// it arrives. Timed from Ask until it returns the reply (Ask also acks the
// reply durably for alice before returning).
func benchAsk(ctx context.Context, h *procOwner, cfg config, r *Results) error {
	p, err := newPair(ctx, h, "ask")
	if err != nil {
		return err
	}
	defer p.close()
	warm := max(5, cfg.AskN/20)
	total := warm + cfg.AskN
	bobID := p.bob.ID()
	rcv := newReceiver(p.cb, p.bob, total)
	rcv.handle = func(ctx context.Context, m wire.Message) error {
		if !m.ExpectsReply {
			return fmt.Errorf("message %s is not an ask", m.ID)
		}
		_, err := p.cb.Send(ctx, wire.SendRequest{From: bobID, To: m.From.ID, Text: "ok " + m.Text[:9], ReplyTo: m.ID})
		return err
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rcv.start(rctx)
	sent := newSentIDs(total)
	from := p.a.ID()
	rts := make([]time.Duration, 0, cfg.AskN)
	for i := 0; i < total; i++ {
		t0 := time.Now()
		res, err := p.ca.Ask(ctx, wire.SendRequest{From: from, To: "bob", Text: text(i, cfg.TextBytes)}, cfg.StepTimeout)
		dt := time.Since(t0)
		if err != nil {
			return fmt.Errorf("ask %d: %w", i, err)
		}
		if res.Reply == nil || res.Reply.ReplyTo != res.AskID {
			return fmt.Errorf("ask %d: reply does not answer ask %s", i, res.AskID)
		}
		sent.add(wire.SendReply{ID: res.AskID}, i)
		if i >= warm {
			rts = append(rts, dt)
		}
	}
	if err := rcv.waitAcked(ctx, cfg.StepTimeout); err != nil {
		return err
	}
	if err := errors.Join(sent.check(), rcv.verify(ctx, sent.ids)); err != nil {
		return err
	}
	if left, err := p.ca.Inbox(ctx, from, 10); err != nil || len(left) > 0 {
		return fmt.Errorf("asker inbox after every reply was acked: %d left (err %v)", len(left), err)
	}
	r.lat(rowAsk, "us", rts)
	return nil
}
