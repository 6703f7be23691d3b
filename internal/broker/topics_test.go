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

// Ownership follows its holder (issue 29): while alpha holds db, neither a
// second local session nor a remote one can claim it or release it, in
// either order, and alpha's --await-release waiter is not woken; once alpha
// releases it, another may claim it. (On main the claim was accepted, the
// resource's state being the newest record naming it, and the release that
// followed was honoured.)
func TestOwnershipFollowsItsHolder(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := t.Context()
	a, z, waiter := w.attach("alpha"), w.attach("zulu"), w.attach("waiter")
	w.reportBeta(true)
	if _, err := w.c.Subscribe(ctx, waiter.ID(), "shared/deploy", true); err != nil {
		t.Fatal(err)
	}
	hold := wire.PublishRequest{From: a.ID(), Topic: "shared/deploy", Message: "deploying", Resource: "db", Ownership: wire.OwnershipHeld}
	if _, err := w.c.Publish(ctx, hold); err != nil {
		t.Fatal(err)
	}
	claim := func(from string) wire.PublishRequest {
		return wire.PublishRequest{From: from, Topic: "shared/deploy", Message: "mine now", Resource: "db", Ownership: wire.OwnershipHeld}
	}
	release := func(from string) wire.PublishRequest {
		return wire.PublishRequest{From: from, Topic: "shared/deploy", Event: wire.EventRelease, Message: "free", Resource: "db", Ownership: wire.OwnershipReleased}
	}
	remote := func(pub wire.PublishRequest) error {
		pub.From = ""
		_, err := call[wire.BridgeTopicReply](t, w.c, wire.SubjBridgeTopic, wire.BridgeTopic{Host: "beta", Op: "publish",
			From: wire.Peer{ID: bob, Name: "bob"}, Publish: &pub, Exports: []string{"shared"}})
		return err
	}
	local := func(pub wire.PublishRequest) error { _, err := w.c.Publish(ctx, pub); return err }
	for _, order := range [][2]string{{"claim", "release"}, {"release", "claim"}} {
		for who, do := range map[string]func(wire.PublishRequest) error{"zulu": local, "bob@beta": remote} {
			for _, step := range order {
				req := claim(z.ID())
				if step == "release" {
					req = release(z.ID())
				}
				wantCode(t, who+" "+step+"s alpha's db", do(req), wire.CodeResourceHeld)
			}
		}
	}
	topics, _ := w.c.Topics(ctx, "shared/deploy")
	if rs := topics[0].Resources; len(rs) != 1 || rs[0].State != wire.OwnershipHeld || rs[0].Holder.ID != a.ID() {
		t.Fatalf("db after the attempts: %+v, want held by alpha", rs)
	}
	// The holder releases: the waiter wakes, and then another may claim.
	if _, err := w.c.Publish(ctx, release(a.ID())); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, waiter); m.Event != wire.EventRelease || m.From.ID != a.ID() {
		t.Fatalf("waiter woken by %+v, want alpha's release", m)
	}
	if err := remote(claim("")); err != nil {
		t.Fatalf("bob claims the free db: %v", err)
	}
	wantCode(t, "zulu claims bob's db", local(claim(z.ID())), wire.CodeResourceHeld)
	wantCode(t, "alpha releases bob's db", local(release(a.ID())), wire.CodeResourceHeld)
	if err := remote(release("")); err != nil {
		t.Fatalf("bob releases its db: %v", err)
	}
	if m := recv(t, waiter); m.Event != wire.EventRelease || m.From.ID != bob+"@beta" {
		t.Fatalf("waiter woken by %+v, want bob's release", m)
	}
	if err := local(claim(z.ID())); err != nil {
		t.Fatalf("zulu claims the free db: %v", err)
	}
}
