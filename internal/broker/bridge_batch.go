package broker

import (
	"encoding/json"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// Batched bridge requests: the deliveries of one link request
// (wire.BridgeDeliverBatch) and the acks of what the bridge forwarded
// (wire.BridgeAckBatch). Each item is handled as if it came alone, in the
// batch's order, and all are handed to the commit pipeline at once, so
// that they share commits instead of costing one round trip and one fsync
// each. The first delivery refused before the commit ends a delivery
// batch: a later message is never stored ahead of an earlier one that the
// bridge retries.

// batchAnswers routes the answers of a batch's items (respond to the
// message made for each) into the batch's reply instead of onto the wire.
var batchAnswers sync.Map // *nats.Msg → func([]byte)

// answeredInBatch hands data to the batch m belongs to, if it does.
func answeredInBatch(m *nats.Msg, data []byte) bool {
	fn, ok := batchAnswers.LoadAndDelete(m)
	if ok {
		fn.(func([]byte))(data)
	}
	return ok
}

// inBatch runs item for each of n items with the message its answer goes
// to, until one returns false, and answers m with the answers of the items
// run, once all have answered, by reply.
func (b *Broker) inBatch(m *nats.Msg, n int, item func(i int, one *nats.Msg) bool, reply func(raw [][]byte) any) {
	raw := make([][]byte, n)
	var wg sync.WaitGroup
	ran := 0
	for i := range n {
		one := &nats.Msg{Reply: "batch"} // answered into the batch
		wg.Add(1)
		batchAnswers.Store(one, func(data []byte) {
			raw[i] = data
			wg.Done()
		})
		ran++
		if !item(i, one) {
			break
		}
	}
	answer := func() {
		wg.Wait()
		respond(m, reply(raw[:ran]))
	}
	if !b.tasks.Go(answer) {
		answer()
	}
}

// decodeAnswers decodes the answers of a batch's items.
func decodeAnswers[Res any](raw [][]byte) []wire.Reply[Res] {
	out := make([]wire.Reply[Res], len(raw))
	for i, data := range raw {
		if err := json.Unmarshal(data, &out[i]); err != nil {
			out[i] = wire.Reply[Res]{Error: wire.Errorf(wire.CodeInternal, "batch answer: %v", err)}
		}
	}
	return out
}

func (b *Broker) onBridgeDeliverBatch(m *nats.Msg) {
	var req wire.BridgeDeliverBatch
	if err := json.Unmarshal(m.Data, &req); err != nil || len(req.Messages) == 0 || len(req.Messages) > wire.MaxBridgeBatch {
		respond(m, wire.Reply[wire.BridgeDeliverBatchReply]{Error: wire.Errorf(wire.CodeBadRequest, "bad bridge delivery batch")})
		return
	}
	size := len(m.Data) / len(req.Messages)
	b.inBatch(m, len(req.Messages), func(i int, one *nats.Msg) bool {
		return b.deliverFromHost(one, wire.BridgeDeliver{Host: req.Host, Message: req.Messages[i], Limits: req.Limits}, size)
	}, func(raw [][]byte) any {
		return wire.Reply[wire.BridgeDeliverBatchReply]{Result: &wire.BridgeDeliverBatchReply{Results: decodeAnswers[wire.SendReply](raw)}}
	})
}

func (b *Broker) onBridgeAckBatch(m *nats.Msg) {
	var req wire.BridgeAckBatch
	if err := json.Unmarshal(m.Data, &req); err != nil || len(req.Acks) == 0 || len(req.Acks) > wire.MaxBridgeBatch {
		respond(m, wire.Reply[wire.BridgeAckBatchReply]{Error: wire.Errorf(wire.CodeBadRequest, "bad bridge ack batch")})
		return
	}
	b.inBatch(m, len(req.Acks), func(i int, one *nats.Msg) bool {
		b.settleOutbox(one, req.Acks[i])
		return true
	}, func(raw [][]byte) any {
		return wire.Reply[wire.BridgeAckBatchReply]{Result: &wire.BridgeAckBatchReply{Results: decodeAnswers[wire.BridgeAckReply](raw)}}
	})
}
