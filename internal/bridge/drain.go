package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Forwarding the outbox: one loop per host, oldest message first, one
// request at a time (so the receiving host stores them in order). A message
// stays in the outbox until the remote broker stored it (or refused it for
// good); a retry after a lost answer is recognised there by its id.

const drainBatch = 100

// drainLoop forwards p's outbox whenever kicked and every drainEvery.
func (s *side) drainLoop(ctx context.Context, p *peer) {
	t := time.NewTicker(drainEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.kick:
		case <-t.C:
		}
		for s.drainOnce(ctx, p) {
		}
	}
}

// drainOnce forwards one batch; it reports whether more may be waiting.
// A host's outbox waits until the host was reported up to the broker (its
// sessions are known there before anything is forwarded).
func (s *side) drainOnce(ctx context.Context, p *peer) bool {
	s.mu.Lock()
	up := p.reported
	s.mu.Unlock()
	if !up || !s.link.IsConnected() {
		return false
	}
	cctx, cancel := context.WithTimeout(ctx, linkTimeout)
	box, err := intercom.Call[wire.InboxReply](cctx, s.local, wire.SubjBridgeOutbox, wire.BridgeOutboxRequest{Host: p.host, Limit: drainBatch})
	cancel()
	if err != nil || len(box.Messages) == 0 {
		return false
	}
	for _, msg := range box.Messages {
		if !s.forward(ctx, p, msg) {
			return false
		}
	}
	return len(box.Messages) == drainBatch
}

// forward sends one message and settles it with the local broker; false
// means stop for now (link down, remote trouble, a quota).
func (s *side) forward(ctx context.Context, p *peer, msg wire.Message) bool {
	fwd := msg
	// The remote host knows its own sessions and messages by their native ids.
	fwd.To = strings.TrimSuffix(msg.To, "@"+p.host)
	fwd.ReplyTo = strings.TrimSuffix(msg.ReplyTo, "@"+p.host)
	ack := wire.BridgeAck{Host: p.host, ID: msg.ID}
	data, err := wire.LinkJSON(wire.BridgeDeliver{Host: s.opts.Name, Message: fwd})
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
		ack.Result = out.Result
		if out.Error != nil {
			switch out.Error.Code {
			case wire.CodeInternal, wire.CodeNoSpace:
				s.setPeerError(p, "forward: "+out.Error.Message)
				return false // remote trouble: retry later
			case wire.CodeQuota:
				ack.Transient = true
			}
			ack.Error, ack.Result = out.Error, nil
			s.setPeerError(p, "refused: "+out.Error.Message)
			s.warn("remote refused message", "host", p.host, "id", msg.ID, "to", msg.To, "err", out.Error.Message)
		}
	}
	actx, cancel := context.WithTimeout(ctx, linkTimeout)
	r, err := intercom.Call[wire.BridgeAckReply](actx, s.local, wire.SubjBridgeAck, ack)
	cancel()
	if err != nil || r.Kept {
		return false // kept for later (a quota of the remote side), or the broker is away
	}
	return true
}

func (s *side) setPeerError(p *peer, msg string) {
	s.mu.Lock()
	p.lastErr = msg
	s.mu.Unlock()
}
