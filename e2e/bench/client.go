package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// The Go client's own CPU (pkg/intercom, in this process) per message:
// first a pipelined sender sends to a session that is registered but not
// holding (the messages wait in its inbox), then a holder attaches and is
// pushed the backlog, acking it in batches through its Session. Each phase's
// CPU time of this process (getrusage: user+system, GC included) divided
// by the messages is the row; the broker's CPU is not in it.

const (
	rowClientSendCPU = "client: CPU per sent message (pipelined SendAsync)"
	rowClientRecvCPU = "client: CPU per received message (pushed, Session.Ack)"
	// The floor of the sent row: raw nats.go requests through the gateway,
	// as many in flight, one wildcard reply subscription, no intercom.
	rowClientFloorCPU = "client floor: CPU per pipelined raw NATS request/reply"
	// The bench process's CPU in the 50-sender fan-in: 50 sending clients
	// and the holder, per message.
	rowFaninClientCPU = "fan-in: 50 senders: client CPU per message (senders and holder)"
)

// selfCPU is this process's user+system CPU time so far.
func selfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// profiled runs fn with this process's CPU profile written to name in the
// profile directory (when there is one) and returns fn's CPU time.
func profiled(h *procOwner, name string, fn func() error) (time.Duration, error) {
	if h.profil != "" {
		f, err := os.Create(filepath.Join(h.profil, name+".cpu.pprof"))
		if err != nil {
			return 0, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return 0, err
		}
		defer pprof.StopCPUProfile()
	}
	cpu0, err := selfCPU()
	if err != nil {
		return 0, err
	}
	if err := fn(); err != nil {
		return 0, err
	}
	cpu1, err := selfCPU()
	return cpu1 - cpu0, err
}

func benchClientCPU(ctx context.Context, h *procOwner, cfg config, r *Results) error {
	b, err := h.startBroker(ctx, "client")
	if err != nil {
		return err
	}
	defer b.Stop()
	cs, err := b.Connect(ctx, "sender")
	if err != nil {
		return err
	}
	defer cs.Close()
	cr, err := b.Connect(ctx, "sink")
	if err != nil {
		return err
	}
	defer cr.Close()
	sender, err := cs.Attach(ctx, intercom.AttachOptions{Name: "sender", NoDeliver: true})
	if err != nil {
		return err
	}
	parked, err := cr.Attach(ctx, intercom.AttachOptions{Name: "sink", NoDeliver: true})
	if err != nil {
		return err
	}
	n := cfg.PipelineN
	sent := newSentIDs(n)
	texts := make([]string, n) // made before: the bench's work is not the client's
	for i := range texts {
		texts[i] = text(i, cfg.TextBytes)
	}
	from := sender.ID()
	sendCPU, err := profiled(h, "client-send", func() error {
		return pipelinedAsync(ctx, 1, n, cfg.PipelineDepth, func(_, idx int) (*intercom.SendFuture, error) {
			return cs.SendAsync(wire.SendRequest{From: from, To: "sink", Text: texts[idx], Lean: true})
		}, sent.add)
	})
	if err != nil {
		return err
	}
	if err := parked.Detach(ctx); err != nil {
		return err
	}
	var rcv *receiver
	recvCPU, err := profiled(h, "client-recv", func() error {
		sink, err := cr.Attach(ctx, intercom.AttachOptions{ResumeID: parked.ID()})
		if err != nil {
			return err
		}
		rcv = newReceiver(cr, sink, n)
		rcv.sessionAck = true
		rctx, cancel := context.WithCancel(ctx)
		defer cancel()
		rcv.start(rctx)
		return rcv.waitAcked(ctx, cfg.StepTimeout)
	})
	if err != nil {
		return err
	}
	if err := errors.Join(sent.check(), rcv.verify(ctx, sent.ids)); err != nil {
		return err
	}
	payload := mustJSON(wire.SendRequest{From: from, To: "sink", Text: texts[0], ClientMsgID: "0123456789abcdef0123456789abcdef"})
	floorCPU, err := clientFloor(ctx, h, cfg, n, payload)
	if err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	per := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) / float64(n) }
	r.val(rowClientSendCPU, "us CPU", per(sendCPU))
	r.val(rowClientRecvCPU, "us CPU", per(recvCPU))
	r.val(rowClientFloorCPU, "us CPU", per(floorCPU))
	return nil
}

// clientFloor is this process's CPU time for n raw requests of payload to
// the floor server's echo responder, cfg.PipelineDepth in flight, answers
// on one wildcard subscription (what SendAsync does, without intercom).
func clientFloor(ctx context.Context, h *procOwner, cfg config, n int, payload []byte) (time.Duration, error) {
	fs, err := startFloorServer(h)
	if err != nil {
		return 0, err
	}
	defer fs.Stop()
	nc, err := fs.gwConnect("floor-pipelined")
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	inbox := nc.NewInbox() + "."
	window := make(chan struct{}, cfg.PipelineDepth)
	var got atomic.Int64
	all := make(chan struct{})
	sub, err := nc.Subscribe(inbox+"*", func(*nats.Msg) {
		<-window
		if got.Add(1) == int64(n) {
			close(all)
		}
	})
	if err != nil {
		return 0, err
	}
	_ = sub.SetPendingLimits(-1, -1)
	if err := nc.Flush(); err != nil {
		return 0, err
	}
	return profiled(h, "client-floor", func() error {
		for i := range n {
			select {
			case window <- struct{}{}:
			case <-ctx.Done():
				return ctx.Err()
			}
			if err := nc.PublishRequest(floorSubj, inbox+strconv.FormatUint(uint64(i), 36), payload); err != nil {
				return err
			}
		}
		select {
		case <-all:
			return nil
		case <-time.After(cfg.StepTimeout):
			return fmt.Errorf("%d of %d answers", got.Load(), n)
		case <-ctx.Done():
			return ctx.Err()
		}
	})
}
