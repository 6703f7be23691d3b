package bridge

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// relayBatch passes a batch of deliveries to the local broker in one
// request and its raw reply back. A broker that predates batches (no
// responders) gets them one request at a time, in order, up to the first
// it refuses, and the answers go back as one batch reply.
func (s *side) relayBatch(m *nats.Msg, req wire.BridgeDeliverBatch) {
	data, _ := json.Marshal(req)
	ctx, cancel := context.WithTimeout(s.ctx, linkTimeout)
	defer cancel()
	res, err := s.local.Conn().RequestWithContext(ctx, wire.SubjBridgeBatch, data)
	if err == nil {
		_ = m.Respond(res.Data)
		return
	}
	if !errors.Is(err, nats.ErrNoResponders) {
		respondErr(m, wire.Errorf(wire.CodeInternal, "remote broker: %v", err))
		return
	}
	out := wire.BridgeDeliverBatchReply{}
	for _, msg := range req.Messages {
		one, _ := json.Marshal(wire.BridgeDeliver{Host: req.Host, Message: msg, Limits: req.Limits})
		res, err := s.local.Conn().RequestWithContext(ctx, wire.SubjBridgeDeliver, one)
		var r wire.Reply[wire.SendReply]
		if err != nil {
			r.Error = wire.Errorf(wire.CodeInternal, "remote broker: %v", err)
		} else if err := json.Unmarshal(res.Data, &r); err != nil {
			r.Error = wire.Errorf(wire.CodeInternal, "remote broker: unreadable answer")
		}
		out.Results = append(out.Results, r)
		if r.Error != nil {
			break
		}
	}
	reply, _ := wire.LinkJSON(wire.Reply[wire.BridgeDeliverBatchReply]{Result: &out})
	_ = m.Respond(reply)
}
