package broker

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Bridge routes, driven as an intercom-bridge process drives them: it
// reports a remote host ("beta"), takes the outbox, settles what it
// forwarded, and stores what comes from the host.

const bob = "0123456789abcdef" // bob's id on beta

func (w *world) reportBeta(linkUp bool) {
	w.t.Helper()
	rows := []wire.Session{{ID: bob, Name: "bob", Status: "idle", State: wire.StateIdle, Connected: true, AcceptsAsks: true}}
	if _, err := call[wire.Empty](w.t, w.c, wire.SubjBridgePresence, wire.BridgePresence{Host: "beta", LinkUp: linkUp, Sessions: rows}); err != nil {
		w.t.Fatalf("bridge presence: %v", err)
	}
}

// outbound subscribes to what the broker announces for beta.
func (w *world) outbound() *nats.Subscription {
	w.t.Helper()
	sub, err := w.c.Conn().SubscribeSync(wire.BridgeOut("beta"))
	if err != nil {
		w.t.Fatal(err)
	}
	if err := w.c.Conn().Flush(); err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { _ = sub.Unsubscribe() })
	return sub
}

func nextOut(t *testing.T, sub *nats.Subscription) wire.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), bounded)
	defer cancel()
	raw, err := sub.NextMsgWithContext(ctx)
	if err != nil {
		t.Fatalf("nothing announced for beta: %v", err)
	}
	var m wire.Message
	if err := json.Unmarshal(raw.Data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestBridgeSendAcceptedByTheRemoteBroker(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := t.Context()
	a := w.attach("alpha")
	w.reportBeta(true)
	rows, err := w.c.List(ctx, listAll(a))
	if err != nil || !hasRow(rows, "bob@beta") {
		t.Fatalf("list with beta linked: %+v, %v", rows, err)
	}
	out := w.outbound()
	done := make(chan wire.SendReply, 1)
	go func() {
		res, _ := w.c.Send(ctx, wire.SendRequest{From: a.ID(), To: "bob@beta", Text: "hi bob"})
		done <- res
	}()
	m := nextOut(t, out)
	if m.To != bob+"@beta" || m.From.ID != a.ID() || m.Text != "hi bob" {
		t.Fatalf("announced %+v", m)
	}
	page, err := call[wire.InboxReply](t, w.c, wire.SubjBridgeOutbox, wire.BridgeOutboxRequest{Host: "beta"})
	if err != nil || len(page.Messages) != 1 || page.Messages[0].ID != m.ID {
		t.Fatalf("outbox: %+v, %v", page, err)
	}
	if _, err := call[wire.BridgeAckReply](t, w.c, wire.SubjBridgeAck, wire.BridgeAck{Host: "beta", ID: m.ID, Result: &wire.SendReply{ID: m.ID}}); err != nil {
		t.Fatal(err)
	}
	if res := <-done; !res.RemoteStored || res.Queued {
		t.Fatalf("send reply %+v, want stored by the remote broker", res)
	}
	st, err := call[wire.BridgeStatusReply](t, w.c, wire.SubjBridgeStatus, struct{}{})
	if err != nil || len(st.Hosts) != 1 || !st.Hosts[0].LinkUp || st.Hosts[0].Outbox != 0 || st.Hosts[0].Sessions != 1 {
		t.Fatalf("bridge status: %+v, %v", st, err)
	}
}

// With the link down a remote send is queued at once; a refusal by the
// remote side comes back to the sender as a notice.
func TestBridgeQueuedThenRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a := w.attach("alpha")
	w.reportBeta(false)
	res := w.send(a, "bob@beta", "later")
	if !res.Queued || res.RemoteStored {
		t.Fatalf("send over a down link: %+v, want queued", res)
	}
	refusal := &wire.Error{Code: wire.CodeNotFound, Message: "no bob here"}
	if _, err := call[wire.BridgeAckReply](t, w.c, wire.SubjBridgeAck, wire.BridgeAck{Host: "beta", ID: res.ID, Error: refusal, Transient: true}); err != nil {
		t.Fatal(err)
	}
	if page, _ := call[wire.InboxReply](t, w.c, wire.SubjBridgeOutbox, wire.BridgeOutboxRequest{Host: "beta"}); len(page.Messages) != 1 {
		t.Fatal("a transient refusal of a message nobody waits for removed it")
	}
	if _, err := call[wire.BridgeAckReply](t, w.c, wire.SubjBridgeAck, wire.BridgeAck{Host: "beta", ID: res.ID, Error: refusal}); err != nil {
		t.Fatal(err)
	}
	notice := recv(t, a)
	if notice.ReplyTo != res.ID || notice.From.ID != noticeSender+"@beta" {
		t.Fatalf("notice %+v", notice)
	}
	if _, err := call[wire.BridgeAckReply](t, w.c, wire.SubjBridgeAck, wire.BridgeAck{Host: "Bad Host", ID: "x"}); err == nil {
		t.Fatal("an ack from an invalid host accepted")
	}
}

// A message from beta is stored once and pushed; an ask from beta can be
// answered, the answer going to beta's outbox.
func TestBridgeDeliverAndRemoteAsk(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a := w.attach("alpha")
	in := wire.Message{ID: "r1", From: wire.Peer{ID: bob, Name: "bob"}, To: "alpha", Text: "from beta", Delivery: wire.DeliverySteer, ExpectsReply: true}
	res, err := call[wire.SendReply](t, w.c, wire.SubjBridgeDeliver, wire.BridgeDeliver{Host: "beta", Message: in})
	if err != nil || res.Duplicate {
		t.Fatalf("delivery: %+v, %v", res, err)
	}
	again, err := call[wire.SendReply](t, w.c, wire.SubjBridgeDeliver, wire.BridgeDeliver{Host: "beta", Message: in})
	if err != nil || !again.Duplicate {
		t.Fatalf("the same delivery again: %+v, %v; want duplicate", again, err)
	}
	m := recv(t, a)
	if m.ID != "r1@beta" || m.From.ID != bob+"@beta" || m.From.Name != "bob@beta" {
		t.Fatalf("stored as %+v", m)
	}
	w.pendingOf(a, 1)
	w.reportBeta(false)
	reply := w.send(a, bob+"@beta", "answer", func(r *wire.SendRequest) { r.ReplyTo = m.ID })
	if !reply.Queued {
		t.Fatalf("reply to beta: %+v", reply)
	}
	w.pendingOf(a, 0)
	bad := in
	bad.ID, bad.From.ID = "r2", "not an id!"
	_, err = call[wire.SendReply](t, w.c, wire.SubjBridgeDeliver, wire.BridgeDeliver{Host: "beta", Message: bad})
	wantCode(t, "a delivery from an invalid sender", err, wire.CodeBadRequest)
	_, err = call[wire.SendReply](t, w.c, wire.SubjBridgeDeliver, "junk")
	wantCode(t, "an undecodable delivery", err, wire.CodeBadRequest)
	st, err := call[wire.BridgeStatusReply](t, w.c, wire.SubjBridgeStatus, struct{}{})
	if err != nil || len(st.Hosts) != 1 || st.Hosts[0].InboxQueued != 1 || st.Hosts[0].Outbox != 1 {
		t.Fatalf("status: %+v, %v; want one message from beta here and one for it", st, err)
	}
	purged, err := call[wire.BridgePurgeReply](t, w.c, wire.SubjBridgePurge, wire.BridgePurge{Host: "beta", Outbox: true})
	if err != nil || purged.Messages != 1 || purged.Outbox != 1 {
		t.Fatalf("purge: %+v, %v", purged, err)
	}
	if rows, _ := w.c.List(t.Context(), listAll(a)); hasRow(rows, "bob@beta") {
		t.Fatal("a purged host is still listed")
	}
}

// Beta's sessions reach the topics this host exports, and a wake-up for a
// remote subscriber goes to beta's outbox.
func TestBridgeTopics(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := t.Context()
	a := w.attach("alpha")
	w.reportBeta(true)
	peer := wire.Peer{ID: bob, Name: "bob"}
	topicOp := func(op wire.BridgeTopic) (*wire.BridgeTopicReply, error) {
		op.Host, op.From, op.Exports = "beta", peer, []string{"deploy"}
		return call[wire.BridgeTopicReply](t, w.c, wire.SubjBridgeTopic, op)
	}
	if _, err := topicOp(wire.BridgeTopic{Op: "subscribe", Subscribe: &wire.SubscribeRequest{Topic: "deploy/api"}}); err != nil {
		t.Fatal(err)
	}
	_, err := topicOp(wire.BridgeTopic{Op: "subscribe", Subscribe: &wire.SubscribeRequest{Topic: "private"}})
	wantCode(t, "a topic not exported", err, wire.CodeNotFound)
	out := w.outbound()
	if _, err := w.c.Publish(ctx, wire.PublishRequest{From: a.ID(), Topic: "deploy/api", Event: wire.EventDecision, Message: "ship it"}); err != nil {
		t.Fatal(err)
	}
	if m := nextOut(t, out); m.To != bob+"@beta" || m.Topic != "deploy/api" {
		t.Fatalf("wake-up for beta %+v", m)
	}
	if _, err := topicOp(wire.BridgeTopic{Op: "publish", Publish: &wire.PublishRequest{Topic: "deploy/api", Message: "bob's view"}}); err != nil {
		t.Fatal(err)
	}
	listed, err := topicOp(wire.BridgeTopic{Op: "topics"})
	if err != nil || len(listed.Topics) != 1 || len(listed.Topics[0].Records) != 2 {
		t.Fatalf("topics read by beta: %+v, %v", listed, err)
	}
	topics, _ := w.c.Topics(ctx, "deploy/api")
	if len(topics) != 1 || len(topics[0].Subscribers) != 1 || topics[0].Subscribers[0].Name != "bob@beta" || !topics[0].Subscribers[0].Connected {
		t.Fatalf("local view of beta's subscription: %+v", topics)
	}
	if _, err := topicOp(wire.BridgeTopic{Op: "unsubscribe", Subscribe: &wire.SubscribeRequest{Topic: "deploy/api"}}); err != nil {
		t.Fatal(err)
	}
	_, err = topicOp(wire.BridgeTopic{Op: "dance"})
	wantCode(t, "an unknown op", err, wire.CodeBadRequest)
	if err := w.c.Forget(ctx, bob+"@beta"); err != nil {
		t.Fatalf("forget bob's record: %v", err)
	}
	wantCode(t, "forget bob twice", w.c.Forget(ctx, bob+"@beta"), wire.CodeNotFound)
	if _, err := call[wire.Empty](t, w.c, wire.SubjBridgeState, wire.BridgeState{Name: "gamma", Mode: "join", Connected: true}); err != nil {
		t.Fatal(err)
	}
	st, err := call[wire.BridgeStatusReply](t, w.c, wire.SubjBridgeStatus, struct{}{})
	if err != nil || st.Bridge == nil || st.Bridge.Name != "gamma" {
		t.Fatalf("status after the bridge's report: %+v, %v", st, err)
	}
}

func listAll(self interface{ ID() string }) intercom.ListOptions {
	return intercom.ListOptions{Self: self.ID(), Scope: "all", Cwd: "/proj"}
}

func hasRow(rows []wire.Session, name string) bool {
	for _, r := range rows {
		if r.Name == name {
			return true
		}
	}
	return false
}

// A transient refusal (a quota of the remote side) of a message whose
// sender still waits deletes it and tells the sender.
func TestBridgeTransientRefusalReachesItsWaitingSender(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a := w.attach("alpha")
	w.reportBeta(true)
	out := w.outbound()
	done := make(chan error, 1)
	go func() {
		_, err := w.c.Send(t.Context(), wire.SendRequest{From: a.ID(), To: "bob@beta", Text: "too many"})
		done <- err
	}()
	m := nextOut(t, out)
	refusal := &wire.Error{Code: wire.CodeQuota, Message: "quota_exceeded: alpha sends more than 10 messages per second here"}
	if _, err := call[wire.BridgeAckReply](t, w.c, wire.SubjBridgeAck, wire.BridgeAck{Host: "beta", ID: m.ID, Error: refusal, Transient: true}); err != nil {
		t.Fatal(err)
	}
	var we *wire.Error
	if err := <-done; !errors.As(err, &we) || we.Code != wire.CodeQuota {
		t.Fatalf("send: %v, want the remote's quota refusal", err)
	}
	if page, _ := call[wire.InboxReply](t, w.c, wire.SubjBridgeOutbox, wire.BridgeOutboxRequest{Host: "beta"}); len(page.Messages) != 0 {
		t.Fatalf("outbox after the refusal its sender heard: %+v", page.Messages)
	}
}

// A waiting sender is answered once: a transient refusal that claimed it
// outlives the sender's timeout (which must not then say "queued" of a
// message the refusal deletes), and a timeout that came first leaves
// nothing to claim (the message stays queued).
func TestRouteWaitAnsweredOnce(t *testing.T) {
	t.Parallel()
	rt := &routeTable{wait: map[string]*remoteWait{}}
	wait := func(id string) chan remoteOutcome {
		w := &remoteWait{ch: make(chan remoteOutcome, 1)}
		rt.wait[id] = w
		return w.ch
	}
	refused := remoteOutcome{ack: wire.BridgeAck{ID: "m1", Error: &wire.Error{Code: wire.CodeQuota}, Transient: true}}

	ch := wait("m1")
	if !rt.claim("m1") || !rt.claim("m1") {
		t.Fatal("a waiting sender could not be claimed (twice is once)")
	}
	if rt.timedOut("m1") {
		t.Fatal("a claimed sender's timeout forgot it: it would be told queued")
	}
	if !rt.answer("m1", refused) || rt.answer("m1", remoteOutcome{queued: true}) {
		t.Fatal("a claimed sender not answered exactly once")
	}
	if o := <-ch; o.queued || o.ack.Error == nil {
		t.Fatalf("the claimed sender was told %+v, want the refusal", o)
	}

	wait("m2")
	if !rt.timedOut("m2") || rt.claim("m2") || rt.answer("m2", refused) {
		t.Fatal("a sender whose wait ran out was still claimed or answered")
	}
}
