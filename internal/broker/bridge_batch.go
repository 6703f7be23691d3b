package broker

import (
	"encoding/json"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// Batched deliveries from a bridged host (wire.BridgeDeliverBatch): the
// messages of one link request are handed to the commit in their order,
// each as one BridgeDeliver, so that they share a commit instead of costing
// one round trip and one fsync each. The first refused before the commit
// ends the batch: a later message is never stored ahead of an earlier one
// that the bridge retries.

// batchAnswers routes the answers of a batch's messages (respond to the
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

func (b *Broker) onBridgeDeliverBatch(m *nats.Msg) {
	var req wire.BridgeDeliverBatch
	if err := json.Unmarshal(m.Data, &req); err != nil || len(req.Messages) > wire.MaxBridgeBatch {
		respond(m, wire.Reply[wire.BridgeDeliverBatchReply]{Error: wire.Errorf(wire.CodeBadRequest, "bad bridge delivery batch")})
		return
	}
	raw := make([]json.RawMessage, len(req.Messages))
	var wg sync.WaitGroup
	tried := 0
	for i, in := range req.Messages {
		one := &nats.Msg{Subject: wire.SubjBridgeDeliver, Reply: "batch"} // answered into the batch
		wg.Add(1)
		batchAnswers.Store(one, func(data []byte) {
			raw[i] = data
			wg.Done()
		})
		tried++
		if !b.deliverFromHost(one, wire.BridgeDeliver{Host: req.Host, Message: in, Limits: req.Limits}, len(m.Data)/len(req.Messages)) {
			break
		}
	}
	answer := func() {
		wg.Wait()
		out := wire.BridgeDeliverBatchReply{Results: make([]wire.Reply[wire.SendReply], tried)}
		for i := range tried {
			if err := json.Unmarshal(raw[i], &out.Results[i]); err != nil {
				out.Results[i] = wire.Reply[wire.SendReply]{Error: wire.Errorf(wire.CodeInternal, "batch answer: %v", err)}
			}
		}
		respond(m, wire.Reply[wire.BridgeDeliverBatchReply]{Result: &out})
	}
	if !b.tasks.Go(answer) {
		answer()
	}
}
