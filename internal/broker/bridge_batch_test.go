package broker

import (
	"fmt"
	"testing"

	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// A batch of deliveries from beta is stored in its order, up to the first
// message refused (those after it are not tried, so none is stored ahead of
// it); sent again, the stored ones are duplicates and the rest follow in
// order.
func TestBridgeDeliverBatchInOrderUpToARefusal(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a := w.attach("alpha")
	msg := func(i int, to string) wire.Message {
		return wire.Message{ID: fmt.Sprintf("b%d", i), From: wire.Peer{ID: bob, Name: "bob"}, To: to, Text: fmt.Sprintf("batch %d", i), Delivery: wire.DeliverySteer}
	}
	batch := wire.BridgeDeliverBatch{Host: "beta", Messages: []wire.Message{msg(0, "alpha"), msg(1, "alpha"), msg(2, "nobody"), msg(3, "alpha")}}
	res, err := call[wire.BridgeDeliverBatchReply](t, w.c, wire.SubjBridgeBatch, batch)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 3 || res.Results[0].Error != nil || res.Results[1].Error != nil {
		t.Fatalf("results %+v, want two stored and the third refused, the fourth not tried", res.Results)
	}
	if e := res.Results[2].Error; e == nil || e.Code != wire.CodeNotFound {
		t.Fatalf("third result %+v, want not_found", res.Results[2])
	}
	// The bridge retries from the first message it still holds.
	batch.Messages = []wire.Message{msg(1, "alpha"), msg(3, "alpha"), msg(4, "alpha")}
	res, err = call[wire.BridgeDeliverBatchReply](t, w.c, wire.SubjBridgeBatch, batch)
	if err != nil || len(res.Results) != 3 {
		t.Fatalf("retry: %+v, %v", res, err)
	}
	if r := res.Results[0]; r.Result == nil || !r.Result.Duplicate {
		t.Fatalf("retry of a stored message: %+v, want duplicate", r)
	}
	for _, want := range []string{"b0@beta", "b1@beta", "b3@beta", "b4@beta"} {
		if m := recv(t, a); m.ID != want {
			t.Fatalf("received %s, want %s (in order, once)", m.ID, want)
		}
	}
	for _, bad := range []wire.BridgeDeliverBatch{{Host: "beta"}, {Host: "beta", Messages: make([]wire.Message, wire.MaxBridgeBatch+1)}} {
		if _, err := call[wire.BridgeDeliverBatchReply](t, w.c, wire.SubjBridgeBatch, bad); err == nil {
			t.Fatalf("a batch of %d messages accepted", len(bad.Messages))
		}
	}
}

// Acks of a batch settle each outbox message as one ack would: the sender
// waiting for it hears that it was stored remotely, and the outbox empties.
func TestBridgeAckBatchSettlesEach(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := t.Context()
	a := w.attach("alpha")
	w.reportBeta(true)
	out := w.outbound()
	const n = 3
	done := make(chan wire.SendReply, n)
	var ids []string
	for i := range n {
		go func() {
			res, _ := w.c.Send(ctx, wire.SendRequest{From: a.ID(), To: "bob@beta", Text: fmt.Sprintf("hi %d", i)})
			done <- res
		}()
		ids = append(ids, nextOut(t, out).ID)
	}
	batch := wire.BridgeAckBatch{}
	for _, id := range ids {
		batch.Acks = append(batch.Acks, wire.BridgeAck{Host: "beta", ID: id, Result: &wire.SendReply{ID: id}})
	}
	res, err := call[wire.BridgeAckBatchReply](t, w.c, wire.SubjBridgeAckBatch, batch)
	if err != nil || len(res.Results) != n {
		t.Fatalf("ack batch: %+v, %v", res, err)
	}
	for i, r := range res.Results {
		if r.Error != nil || r.Result == nil || r.Result.Kept {
			t.Fatalf("ack %d: %+v", i, r)
		}
	}
	for range n {
		if r := <-done; !r.RemoteStored {
			t.Fatalf("send reply %+v, want stored by the remote broker", r)
		}
	}
	if page, err := call[wire.InboxReply](t, w.c, wire.SubjBridgeOutbox, wire.BridgeOutboxRequest{Host: "beta"}); err != nil || len(page.Messages) != 0 {
		t.Fatalf("outbox after the acks: %+v, %v", page, err)
	}
	if _, err := call[wire.BridgeAckBatchReply](t, w.c, wire.SubjBridgeAckBatch, wire.BridgeAckBatch{}); err == nil {
		t.Fatal("an empty ack batch accepted")
	}
}

// A message from a bridged host reaches its holder while it is being
// persisted, as a local send does: with the committer held up, the holder
// has it before the bridge's answer (which waits for the commit), and once
// the commit is done the answer comes and a retry is a duplicate that is
// not pushed again.
func TestBridgeDeliverPushedWhilePersisted(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a := w.attach("alpha")
	release := make(chan struct{})
	stalled := make(chan struct{})
	w.b.cmt.Submit(store.Op{Apply: func(*store.Txn) error { close(stalled); <-release; return nil }, After: func(error) {}})
	<-stalled
	in := wire.BridgeDeliver{Host: "beta", Message: wire.Message{ID: "early1", From: wire.Peer{ID: bob, Name: "bob"}, To: "alpha", Text: "across the hub", Delivery: wire.DeliverySteer}}
	answered := make(chan error, 1)
	go func() {
		_, err := call[wire.SendReply](t, w.c, wire.SubjBridgeDeliver, in)
		answered <- err
	}()
	if m := recv(t, a); m.ID != "early1@beta" || m.Text != "across the hub" {
		t.Fatalf("pushed %+v, want early1@beta", m)
	}
	select {
	case err := <-answered:
		t.Fatalf("the bridge was answered (%v) before the commit", err)
	default:
	}
	close(release)
	if err := <-answered; err != nil {
		t.Fatalf("the bridge's answer after the commit: %v", err)
	}
	res, err := call[wire.SendReply](t, w.c, wire.SubjBridgeDeliver, in)
	if err != nil || !res.Duplicate {
		t.Fatalf("the retry: %+v, %v; want a duplicate", res, err)
	}
	w.send(w.attach("carol"), "alpha", "after") // a marker: nothing else comes before it
	if m := recv(t, a); m.Text != "after" {
		t.Fatalf("received %q (%s), want only the marker: a retry of a delivered message came again", m.Text, m.ID)
	}
}
