package bridge

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// A peer whose bridge predates batches (it answers them "unknown
// operation", or nobody takes them) gets alpha's messages one request each,
// in order, each stored once; a peer that takes batches gets them batched.
func TestForwardToPeersWithAndWithoutBatches(t *testing.T) {
	unknown := mustJSON(wire.Reply[wire.Empty]{Error: wire.Errorf(wire.CodeBadRequest, "unknown operation %q", opDeliverBatch)})
	for _, tc := range []struct {
		name    string
		batches bool   // beta stores batches
		refuse  []byte // else beta's answer to a batch (nil: nobody takes them)
	}{
		{name: "refused as unknown", refuse: unknown},
		{name: "nobody takes them"},
		{name: "batches", batches: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			var mu sync.Mutex
			var got []string
			singles, batched := 0, 0
			store := func(msgs ...wire.Message) []wire.Reply[wire.SendReply] {
				mu.Lock()
				defer mu.Unlock()
				var out []wire.Reply[wire.SendReply]
				for _, m := range msgs {
					got = append(got, m.Text)
					out = append(out, wire.Reply[wire.SendReply]{Result: &wire.SendReply{ID: m.ID}})
				}
				return out
			}
			subscribe := func(op string, fn func(data []byte) []byte) {
				sub, err := r.beta.Subscribe(reqSubject("beta", "alpha", op), func(m *nats.Msg) { _ = m.Respond(fn(m.Data)) })
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = sub.Unsubscribe() })
			}
			subscribe(opDeliver, func(data []byte) []byte {
				var req wire.BridgeDeliver
				if err := json.Unmarshal(data, &req); err != nil {
					t.Error(err)
				}
				mu.Lock()
				singles++
				mu.Unlock()
				return mustJSON(store(req.Message)[0])
			})
			switch {
			case tc.batches:
				subscribe(opDeliverBatch, func(data []byte) []byte {
					var req wire.BridgeDeliverBatch
					if err := json.Unmarshal(data, &req); err != nil {
						t.Error(err)
					}
					mu.Lock()
					batched++
					mu.Unlock()
					return mustJSON(wire.Reply[wire.BridgeDeliverBatchReply]{Result: &wire.BridgeDeliverBatchReply{Results: store(req.Messages...)}})
				})
			case tc.refuse != nil:
				subscribe(opDeliverBatch, func([]byte) []byte { return tc.refuse })
			}
			if err := r.beta.Flush(); err != nil {
				t.Fatal(err)
			}
			const n = 5
			want := r.sendSerially(t, n)
			mu.Lock()
			defer mu.Unlock()
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("beta stored %v, want %v (in order, once)", got, want)
			}
			if tc.batches && (batched != n || singles != 0) {
				t.Fatalf("%d batches and %d single requests, want %d batches", batched, singles, n)
			}
			if !tc.batches && singles != n {
				t.Fatalf("%d single requests, want %d", singles, n)
			}
		})
	}
}
