package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// Bridges in front of a broker that predates batches: alpha's broker has no
// bridge.ackbatch, so the messages beta stored in batches are settled with
// single acks, each message stored on beta once, in order, and each send
// reported stored there.
func TestForwardSettlesWithSingleAcksOnOldBroker(t *testing.T) {
	r := newRig(t, wire.SubjBridgeAckBatch)
	beta := r.storeBatches(t)
	const n = 5
	want := r.sendSerially(t, n)
	beta.mu.Lock()
	defer beta.mu.Unlock()
	got, batches := beta.texts, beta.batches
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("beta stored %v, want %v (in order, once: each settled by a single ack)", got, want)
	}
	if batches != n {
		t.Fatalf("%d batches, want %d (batches travel; only the acks are single)", batches, n)
	}
}

// A batch from beta reaches alpha's broker that has no bridge.deliverbatch
// as single deliveries, in order, up to the first it refuses; the answers
// go back to beta as one batch reply.
func TestBatchToOldBrokerDeliversOneAtATime(t *testing.T) {
	r := newRig(t, wire.SubjBridgeBatch)
	from := wire.Peer{ID: bobID, Name: "bob", Cwd: "/b"}
	msg := func(id, to string) wire.Message {
		return wire.Message{ID: id, From: from, To: to, Text: "text " + id, Delivery: wire.DeliveryPassive, SentAt: time.Now()}
	}
	for _, tc := range []struct {
		name     string
		msgs     []wire.Message
		stored   []string // texts alice gets, in order
		answered int      // results in the reply
		refused  bool     // the last result is an error
	}{
		{name: "all stored", msgs: []wire.Message{msg("b1", r.alice), msg("b2", r.alice), msg("b3", r.alice)},
			stored: []string{"text b1", "text b2", "text b3"}, answered: 3},
		{name: "stops at a refusal", msgs: []wire.Message{msg("c1", r.alice), msg("c2", "nobody-here"), msg("c3", r.alice)},
			stored: []string{"text c1"}, answered: 2, refused: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := r.request(opDeliverBatch, mustJSON(wire.BridgeDeliverBatch{Messages: tc.msgs}))
			if data == nil {
				t.Fatal("no answer to the batch")
			}
			var out wire.Reply[wire.BridgeDeliverBatchReply]
			if err := json.Unmarshal(data, &out); err != nil || out.Error != nil || out.Result == nil {
				t.Fatalf("answer %s: %v; want a batch reply", data, err)
			}
			res := out.Result.Results
			if len(res) != tc.answered {
				t.Fatalf("%d results (%s), want %d", len(res), data, tc.answered)
			}
			for i, rr := range res {
				last := i == len(res)-1
				if tc.refused && last {
					if rr.Error == nil {
						t.Fatalf("result %d: %s, want refused", i, data)
					}
					continue
				}
				if rr.Error != nil || rr.Result == nil {
					t.Fatalf("result %d: %s, want stored", i, data)
				}
			}
			ctx, cancel := context.WithTimeout(r.ctx, 20*time.Second)
			defer cancel()
			inbox, err := r.local.Inbox(ctx, r.alice, 100)
			if err != nil {
				t.Fatal(err)
			}
			var texts []string
			for _, m := range inbox {
				texts = append(texts, m.Text)
			}
			for _, m := range inbox {
				if _, err := r.local.Ack(ctx, r.alice, m.ID); err != nil {
					t.Fatal(err)
				}
			}
			if fmt.Sprint(texts) != fmt.Sprint(tc.stored) {
				t.Fatalf("alice got %q, want %q (in order, once)", texts, tc.stored)
			}
		})
	}
}
