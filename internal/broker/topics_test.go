package broker

import (
	"testing"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Topics: records, subscriptions, wake-ups and advisory ownership.

func TestTopicBlockerWakesSubscribers(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := t.Context()
	a, z := w.attach("alpha"), w.attach("zulu")
	sub, err := w.c.Subscribe(ctx, z.ID(), "repo/api", false)
	if err != nil || sub.Existed {
		t.Fatalf("subscribe: %+v, %v", sub, err)
	}
	if again, err := w.c.Subscribe(ctx, z.ID(), "repo/api", true); err != nil || !again.Existed {
		t.Fatalf("subscribe again: %+v, %v", again, err)
	}
	res, err := w.c.Publish(ctx, wire.PublishRequest{From: a.ID(), Topic: "repo/api", Message: "routine"})
	if err != nil || res.Woken != 0 {
		t.Fatalf("update: %+v, %v; want nobody woken", res, err)
	}
	res, err = w.c.Publish(ctx, wire.PublishRequest{From: a.ID(), Topic: "repo/api", Event: wire.EventBlocker,
		Message: "migrations broken", Resource: "db", Ownership: wire.OwnershipHeld})
	if err != nil || res.Woken != 1 {
		t.Fatalf("blocker: %+v, %v; want one woken", res, err)
	}
	m := recv(t, z)
	if m.Topic != "repo/api" || m.Event != wire.EventBlocker || m.Text != "migrations broken" {
		t.Fatalf("wake-up %+v", m)
	}
	topics, err := w.c.Topics(ctx, "repo/api")
	if err != nil || len(topics) != 1 {
		t.Fatalf("topics: %+v, %v", topics, err)
	}
	ti := topics[0]
	if len(ti.Records) != 1 || ti.Records[0].Message != "migrations broken" || !ti.Records[0].SenderConnected {
		t.Fatalf("records %+v: want alpha's newest, connected", ti.Records)
	}
	if len(ti.Subscribers) != 1 || ti.Subscribers[0].Name != "zulu" || !ti.Subscribers[0].AwaitRelease {
		t.Fatalf("subscribers %+v", ti.Subscribers)
	}
	if len(ti.Resources) != 1 || ti.Resources[0].State != wire.OwnershipHeld || ti.Resources[0].Holder.ID != a.ID() {
		t.Fatalf("resources %+v", ti.Resources)
	}
	// The holder leaves: its claim shows unavailable.
	if err := a.Detach(ctx); err != nil {
		t.Fatal(err)
	}
	topics, _ = w.c.Topics(ctx, "")
	if got := topics[0].Resources[0].State; got != wire.OwnershipUnavailable {
		t.Fatalf("resource of a departed holder: %s, want unavailable", got)
	}
	if err := w.c.Unsubscribe(ctx, z.ID(), "repo/api"); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "unsubscribe twice", w.c.Unsubscribe(ctx, z.ID(), "repo/api"), wire.CodeNotFound)
}

func TestTopicVersionsAndRetries(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := t.Context()
	a := w.attach("alpha")
	first, err := w.c.Publish(ctx, wire.PublishRequest{From: a.ID(), Topic: "t", Message: "v10", Version: 10, ClientMsgID: "p-1"})
	if err != nil {
		t.Fatal(err)
	}
	retry, err := w.c.Publish(ctx, wire.PublishRequest{From: a.ID(), Topic: "t", Message: "v10", Version: 10, ClientMsgID: "p-1"})
	if err != nil || !retry.Duplicate || retry.Seq != first.Seq {
		t.Fatalf("retried publication: %+v, %v; want duplicate of seq %d", retry, err, first.Seq)
	}
	old, err := w.c.Publish(ctx, wire.PublishRequest{From: a.ID(), Topic: "t", Message: "v5", Version: 5})
	if err != nil || !old.Stale {
		t.Fatalf("older version: %+v, %v; want stale", old, err)
	}
	topics, _ := w.c.Topics(ctx, "t")
	if got := topics[0].Records[0].Message; got != "v10" {
		t.Fatalf("record %q, want v10 kept", got)
	}
}

func TestTopicRefusals(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := t.Context()
	a := w.attach("alpha")
	eph := w.attach("", func(o *intercom.AttachOptions) { o.Ephemeral = true })
	_, err := w.c.Subscribe(ctx, eph.ID(), "t", false)
	wantCode(t, "an ephemeral subscriber", err, wire.CodeBadRequest)
	_, err = w.c.Subscribe(ctx, "nobody-at-all", "t", false)
	wantCode(t, "an unknown subscriber", err, wire.CodeNotFound)
	_, err = w.c.Subscribe(ctx, a.ID(), "t/*", false)
	wantCode(t, "a wildcard", err, wire.CodeBadRequest)
	_, err = w.c.Publish(ctx, wire.PublishRequest{From: a.ID(), Topic: "t"})
	wantCode(t, "an empty publication", err, wire.CodeBadRequest)
	_, err = w.c.Publish(ctx, wire.PublishRequest{From: "nobody-at-all", Topic: "t", Message: "m"})
	wantCode(t, "an unknown publisher", err, wire.CodeNotFound)
	_, err = w.c.Topics(ctx, "a//b")
	wantCode(t, "a bad topic read", err, wire.CodeBadRequest)
	_, err = w.c.Topics(ctx, "t@nowhere")
	wantCode(t, "a topic of an unknown host", err, wire.CodeNotFound)
	_, err = w.c.Subscribe(ctx, a.ID(), "t@nowhere", false)
	wantCode(t, "subscribing on an unknown host", err, wire.CodeNotFound)
	_, err = w.c.Publish(ctx, wire.PublishRequest{From: a.ID(), Topic: "t@nowhere", Message: "m"})
	wantCode(t, "publishing on an unknown host", err, wire.CodeNotFound)
	if _, err := call[wire.PublishReply](t, w.c, wire.SubjPublish, "junk"); err == nil {
		t.Fatal("undecodable publication accepted")
	}
}

// Forgetting a session drops its subscriptions.
func TestForgetDropsSubscriptions(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := t.Context()
	z := w.attach("zulu", func(o *intercom.AttachOptions) { o.NoDeliver = true })
	if _, err := w.c.Subscribe(ctx, z.ID(), "t", false); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "forget a connected session", w.c.Forget(ctx, z.ID()), wire.CodeBadRequest)
	if err := z.Detach(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.c.Forget(ctx, z.ID()); err != nil {
		t.Fatal(err)
	}
	if topics, err := w.c.Topics(ctx, "t"); err != nil || len(topics) != 0 {
		t.Fatalf("topics after forgetting the only subscriber: %+v, %v", topics, err)
	}
	wantCode(t, "forget twice", w.c.Forget(ctx, z.ID()), wire.CodeNotFound)
}
