package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Forwarding the outbox: one loop per host, oldest message first. The
// messages read at once travel in batches (one link request each, stored by
// the remote broker in their order and in one commit, see forwardBatch), a
// host whose bridge predates batches gets them one request at a time. A
// message stays in the outbox until the remote broker stored it (or refused
// it for good); a retry after a lost answer is recognised there by its id.

const (
	drainBatch = 256       // outbox messages read at once
	batchBytes = 128 << 10 // encoded bytes of one batch (a bigger message travels alone)
)

// drainLoop forwards p's outbox whenever kicked, and reads it whole every
// drainEvery.
func (s *side) drainLoop(ctx context.Context, p *peer) {
	t := time.NewTicker(drainEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.kick:
		case <-t.C:
			s.forgetKicked(p)
		}
		for s.drainOnce(ctx, p) {
		}
	}
}

// drainOnce forwards what was announced, or else what the outbox holds, a
// read at a time; it reports whether more may be waiting. A host's outbox
// waits until the host was reported up to the broker (its sessions are
// known there before anything is forwarded).
func (s *side) drainOnce(ctx context.Context, p *peer) bool {
	s.mu.Lock()
	up, single := p.reported, p.noBatch
	s.mu.Unlock()
	if !up || !s.link.IsConnected() {
		return false
	}
	if msgs, ok := s.takeKicked(p); ok {
		if !s.forwardAll(ctx, p, msgs, single) {
			s.forgetKicked(p)
		}
		return false
	}
	gen := s.beginRead(p)
	s.outboxReads.Add(1)
	cctx, cancel := context.WithTimeout(ctx, linkTimeout)
	box, err := intercom.Call[wire.InboxReply](cctx, s.local, wire.SubjBridgeOutbox, wire.BridgeOutboxRequest{Host: p.host, Limit: drainBatch})
	cancel()
	if err != nil {
		return false
	}
	if !s.forwardAll(ctx, p, box.Messages, single) {
		return false
	}
	if len(box.Messages) == drainBatch {
		return true
	}
	s.readToEnd(p, gen, box.Messages)
	return false
}

// forwardAll forwards msgs in order, in batches (one at a time to a bridge
// that predates them); false when it stopped before the end.
func (s *side) forwardAll(ctx context.Context, p *peer, msgs []wire.Message, single bool) bool {
	for len(msgs) > 0 {
		if single {
			if !s.forward(ctx, p, msgs[0]) {
				return false
			}
			msgs = msgs[1:]
			continue
		}
		batch, encoded := s.nextBatch(p, msgs)
		done, more := s.forwardBatch(ctx, p, batch, encoded)
		if !more {
			if done == 0 && s.peerSingle(p) { // an old bridge there: one at a time
				single = true
				continue
			}
			return false
		}
		msgs = msgs[done:]
	}
	return true
}

// remoteForm is msg as the remote host knows it: its own sessions and
// messages by their native ids.
func remoteForm(host string, msg wire.Message) wire.Message {
	fwd := msg
	fwd.To = strings.TrimSuffix(msg.To, "@"+host)
	fwd.ReplyTo = strings.TrimSuffix(msg.ReplyTo, "@"+host)
	return fwd
}

// nextBatch takes the oldest messages of msgs that fit one batch (at least
// one) and their encoded request.
func (s *side) nextBatch(p *peer, msgs []wire.Message) ([]wire.Message, []byte) {
	req := wire.BridgeDeliverBatch{Host: s.opts.Name}
	size := 0
	s.mu.Lock()
	most, budget := wire.MaxBridgeBatch, batchBytes
	if p.batchShrink > 0 { // a slow link: smaller batches, each within the link timeout
		most, budget = max(1, most>>p.batchShrink), max(1, budget>>p.batchShrink)
	}
	s.mu.Unlock()
	for _, msg := range msgs[:min(len(msgs), most)] {
		fwd := remoteForm(p.host, msg)
		one, err := wire.LinkJSON(fwd)
		if err != nil {
			break
		}
		if size += len(one) + 1; size > budget && len(req.Messages) > 0 {
			break
		}
		req.Messages = append(req.Messages, fwd)
	}
	if len(req.Messages) == 0 { // unencodable: alone, it is refused as before batches
		return msgs[:1], nil
	}
	data, _ := wire.LinkJSON(req)
	return msgs[:len(req.Messages)], data
}

// peerSingle reports whether p's bridge refused a batch as an unknown
// operation (it predates them); it is then sent one message at a time.
func (s *side) peerSingle(p *peer) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return p.noBatch
}

// forwardBatch sends batch in one link request and settles, in order, the
// messages the remote broker answered; done is how many were settled and
// more whether to go on with the rest.
func (s *side) forwardBatch(ctx context.Context, p *peer, batch []wire.Message, data []byte) (done int, more bool) {
	if data == nil || len(data) > wire.MaxLinkPayload { // one message, too big for the link once batched
		return boolCount(s.forward(ctx, p, batch[0]))
	}
	res, err := s.link.Request(reqSubject(p.host, s.opts.Name, opDeliverBatch), data, linkTimeout)
	if errors.Is(err, nats.ErrNoResponders) {
		// Nobody takes batches there: a peer that answers only single
		// deliveries (or none, when its bridge is away). The first message
		// alone tells which.
		ok := s.forward(ctx, p, batch[0])
		if ok {
			s.mu.Lock()
			p.noBatch = true
			s.mu.Unlock()
		}
		return boolCount(ok)
	}
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			s.setPeerError(p, "forward: "+err.Error())
			s.log.Debug("forward deferred", "host", p.host, "n", len(batch), "err", err)
		}
		if errors.Is(err, nats.ErrTimeout) && len(batch) > 1 {
			s.resizeBatches(p, true)
		}
		return 0, false // link or host down: the outbox keeps them
	}
	s.resizeBatches(p, false)
	var out wire.Reply[wire.BridgeDeliverBatchReply]
	if err := json.Unmarshal(res.Data, &out); err != nil {
		s.setPeerError(p, "forward: unreadable answer")
		return 0, false
	}
	if out.Error != nil || out.Result == nil {
		if out.Error != nil && out.Error.Code == wire.CodeBadRequest && strings.Contains(out.Error.Message, "unknown operation") {
			s.mu.Lock()
			p.noBatch = true
			s.mu.Unlock()
			return 0, false
		}
		// Refused as a whole (a rate of the remote bridge): the first message
		// alone, as before batches, settles it or keeps it for later.
		return boolCount(s.forward(ctx, p, batch[0]))
	}
	acks := make([]wire.BridgeAck, 0, len(out.Result.Results))
	for i, r := range out.Result.Results[:min(len(out.Result.Results), len(batch))] {
		ack, ok := s.outcome(p, batch[i], r)
		if !ok {
			break
		}
		acks = append(acks, ack)
	}
	if !s.ackAll(ctx, acks) {
		return 0, false
	}
	return len(acks), len(acks) > 0 && len(acks) == len(out.Result.Results)
}

// resizeBatches halves p's batches after a batch timed out (a slow link
// must still carry one within the link timeout), and grows them back, one
// step per answered batch.
func (s *side) resizeBatches(p *peer, timedOut bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case timedOut && p.batchShrink < 8:
		p.batchShrink++
	case !timedOut && p.batchShrink > 0:
		p.batchShrink--
	}
}

func boolCount(ok bool) (int, bool) {
	if ok {
		return 1, true
	}
	return 0, false
}

// ackAll settles acks with the local broker in one request (they share
// its commits); false when one is not confirmed or is kept for later. A
// broker that predates batched acks gets them as requests all in flight at
// once.
func (s *side) ackAll(ctx context.Context, acks []wire.BridgeAck) bool {
	if len(acks) == 0 {
		return true
	}
	actx, cancel := context.WithTimeout(ctx, linkTimeout)
	defer cancel()
	res, err := intercom.Call[wire.BridgeAckBatchReply](actx, s.local, wire.SubjBridgeAckBatch, wire.BridgeAckBatch{Acks: acks})
	if err == nil {
		if len(res.Results) != len(acks) {
			return false
		}
		for _, r := range res.Results {
			if r.Error != nil || r.Result == nil || r.Result.Kept {
				return false
			}
		}
		return true
	}
	if !errors.Is(err, nats.ErrNoResponders) {
		return false
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	all := true
	for _, ack := range acks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := intercom.Call[wire.BridgeAckReply](actx, s.local, wire.SubjBridgeAck, ack)
			if err != nil || r.Kept {
				mu.Lock()
				all = false
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return all
}

// forward sends one message and settles it with the local broker; false
// means stop for now (link down, remote trouble, a quota).
func (s *side) forward(ctx context.Context, p *peer, msg wire.Message) bool {
	ack := wire.BridgeAck{Host: p.host, ID: msg.ID}
	data, err := wire.LinkJSON(wire.BridgeDeliver{Host: s.opts.Name, Message: remoteForm(p.host, msg)})
	var res *nats.Msg
	if err == nil {
		res, err = s.link.Request(reqSubject(p.host, s.opts.Name, opDeliver), data, linkTimeout)
	}
	switch {
	case errors.Is(err, nats.ErrMaxPayload):
		ack.Error = wire.Errorf(wire.CodeTooLarge, "message too large for the bridge link (%d bytes encoded)", len(data))
	case err != nil:
		if !errors.Is(err, context.Canceled) {
			s.setPeerError(p, "forward: "+err.Error())
			s.log.Debug("forward deferred", "host", p.host, "id", msg.ID, "err", err)
		}
		return false // link or host down: the outbox keeps it
	default:
		var out wire.Reply[wire.SendReply]
		if err := json.Unmarshal(res.Data, &out); err != nil {
			s.setPeerError(p, "forward: unreadable answer")
			return false
		}
		var ok bool
		if ack, ok = s.outcome(p, msg, out); !ok {
			return false
		}
	}
	return s.ackAll(ctx, []wire.BridgeAck{ack})
}

// outcome is the ack that settles msg after the remote broker answered
// out; false means leave it (and what follows it) for later: remote
// trouble.
func (s *side) outcome(p *peer, msg wire.Message, out wire.Reply[wire.SendReply]) (wire.BridgeAck, bool) {
	ack := wire.BridgeAck{Host: p.host, ID: msg.ID, Result: out.Result}
	if out.Error == nil {
		return ack, true
	}
	switch out.Error.Code {
	case wire.CodeInternal, wire.CodeNoSpace:
		s.setPeerError(p, "forward: "+out.Error.Message)
		return ack, false // remote trouble: retry later
	case wire.CodeQuota:
		ack.Transient = true
	}
	ack.Error, ack.Result = out.Error, nil
	s.setPeerError(p, "refused: "+out.Error.Message)
	s.warn("remote refused message", "host", p.host, "id", msg.ID, "to", msg.To, "err", out.Error.Message)
	return ack, true
}

func (s *side) setPeerError(p *peer, msg string) {
	s.mu.Lock()
	p.lastErr = msg
	s.mu.Unlock()
}
