package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Topic tests. Absence of a wake-up is proven with a marker: after the
// publication under test a direct message is sent to the subscriber, and
// the subscriber's NEXT event must be that marker. A wake-up is stored in
// the inbox (and pushed) before the publish command returns, so any wrong
// wake-up would be ordered before the marker.

const topicWait = 15 * time.Second

var markerN atomic.Int64

// expectMarker sends a direct message to target and asserts that it is the
// next event p prints: nothing else arrived in between.
func expectMarker(t *testing.T, h *H, p *Proc, target string) {
	t.Helper()
	marker := fmt.Sprintf("marker-%s-%d", target, markerN.Add(1))
	h.OK("send", target, marker)
	ev := p.Event(topicWait)
	if ev["event"] != "message" || ev["text"] != marker {
		t.Fatalf("%s: next event is %v, want only the marker %q (an unexpected event arrived first)", target, ev, marker)
	}
	if _, ok := ev["topic"]; ok {
		t.Fatalf("%s: marker carries a topic field: %v", target, ev)
	}
}

// expectTopicEvent waits for p's next event and checks it is a topic
// wake-up with event, topic and text.
func expectTopicEvent(t *testing.T, p *Proc, who, event, topic, text string) map[string]any {
	t.Helper()
	ev := p.Event(topicWait)
	if ev["event"] != event || ev["topic"] != topic || ev["text"] != text {
		t.Fatalf("%s: got %v, want a %s wake-up on %s with text %q", who, ev, event, topic, text)
	}
	if ev["delivery"] != wire.DeliverySteer {
		t.Fatalf("%s: wake-up delivery %v, want steer", who, ev["delivery"])
	}
	return ev
}

// topicState returns `topics TOPIC --json` for one topic, or nil when the
// broker has no state for it.
func topicState(t *testing.T, h *H, topic string) *wire.TopicInfo {
	t.Helper()
	var out wire.TopicsReply
	h.JSON(&out, "topics", topic)
	var found *wire.TopicInfo
	for i := range out.Topics {
		if out.Topics[i].Topic != topic {
			t.Fatalf("topics %s returned another topic %q: %+v", topic, out.Topics[i].Topic, out)
		}
		found = &out.Topics[i]
	}
	return found
}

// allTopics returns `topics --json`.
func allTopics(t *testing.T, h *H) []wire.TopicInfo {
	t.Helper()
	var out wire.TopicsReply
	h.JSON(&out, "topics")
	return out.Topics
}

func recordFrom(ti *wire.TopicInfo, name string) *wire.TopicRecord {
	if ti == nil {
		return nil
	}
	var found *wire.TopicRecord
	for i := range ti.Records {
		if ti.Records[i].From.Name == name {
			if found != nil {
				return &wire.TopicRecord{Message: "DUPLICATE RECORDS FROM " + name}
			}
			found = &ti.Records[i]
		}
	}
	return found
}

func resourceState(ti *wire.TopicInfo, res string) *wire.ResourceState {
	if ti == nil {
		return nil
	}
	for i := range ti.Resources {
		if ti.Resources[i].Resource == res {
			return &ti.Resources[i]
		}
	}
	return nil
}

func subscriber(ti *wire.TopicInfo, name string) *wire.TopicSubscriber {
	if ti == nil {
		return nil
	}
	for i := range ti.Subscribers {
		if ti.Subscribers[i].Name == name {
			return &ti.Subscribers[i]
		}
	}
	return nil
}

// publish runs `-s sess publish --json ARGS` and returns the reply.
func publish(t *testing.T, h *H, sess string, args ...string) wire.PublishReply {
	t.Helper()
	var r wire.PublishReply
	h.JSON(&r, append([]string{"-s", sess, "publish"}, args...)...)
	return r
}

// clientFor connects a Go client to h's (running) broker.
func clientFor(t *testing.T, h *H) *intercom.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := intercom.Connect(ctx, intercom.Options{Home: h.Home, NoSpawn: true})
	if err != nil {
		t.Fatalf("connect client: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

func ctx10(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestTopicUpdateIsQuiet(t *testing.T) {
	t.Parallel()
	h := newH(t)
	a, aev := h.Attach("--name", "a")
	b, _ := h.Attach("--name", "b")
	c, _ := h.Attach("--name", "c")
	const topic = "browser/shared-profile/tab-4"
	h.OK("-s", "b", "subscribe", topic, "--await-release")
	h.OK("-s", "c", "subscribe", topic)
	h.OK("-s", "a", "subscribe", topic)

	r := publish(t, h, "a", topic, "--resource", "tab-4", "--ownership", "held", "Reviewing the sign-in flow; keep this tab open.")
	if r.Woken != 0 || r.Stale {
		t.Fatalf("update reply %+v, want woken 0, not stale", r)
	}
	// A second update (no resource) also stays quiet.
	out := h.OK("-s", "c", "publish", topic, "--event", "update", "c is reading only")
	if !strings.Contains(out, "quiet") {
		t.Fatalf("update output %q does not say it was quiet", out)
	}

	expectMarker(t, h, b, "b")
	expectMarker(t, h, c, "c")
	expectMarker(t, h, a, "a")

	ti := topicState(t, h, topic)
	rec := recordFrom(ti, "a")
	if rec == nil || rec.Event != wire.EventUpdate || rec.Message != "Reviewing the sign-in flow; keep this tab open." ||
		rec.Resource != "tab-4" || rec.Ownership != wire.OwnershipHeld || !rec.SenderConnected {
		t.Fatalf("a's record %+v in %+v, want update, tab-4 held", rec, ti)
	}
	if rc := recordFrom(ti, "c"); rc == nil || rc.Event != wire.EventUpdate || rc.Message != "c is reading only" {
		t.Fatalf("c's record %+v", rc)
	}
	res := resourceState(ti, "tab-4")
	if res == nil || res.State != wire.OwnershipHeld || res.Holder == nil || res.Holder.ID != aev["id"] {
		t.Fatalf("resource tab-4 %+v, want held by a (%v)", res, aev["id"])
	}
	if s := subscriber(ti, "b"); s == nil || !s.AwaitRelease || !s.Connected {
		t.Fatalf("subscriber b %+v, want await-release, connected", s)
	}
	if s := subscriber(ti, "c"); s == nil || s.AwaitRelease {
		t.Fatalf("subscriber c %+v, want plain", s)
	}
	// The human rendering shows the holder too.
	txt := h.OK("topics", topic)
	if !strings.Contains(txt, "resource tab-4: held by a") {
		t.Fatalf("topics text lacks the holder:\n%s", txt)
	}
}

func TestTopicBlockerAndDecisionWakeEachSubscriberOnce(t *testing.T) {
	t.Parallel()
	h := newH(t)
	a, _ := h.Attach("--name", "a")
	b, _ := h.Attach("--name", "b")
	c, cev := h.Attach("--name", "c")
	const topic = "repo/api/migrations"
	h.OK("-s", "a", "subscribe", topic) // the publisher is subscribed too
	h.OK("-s", "b", "subscribe", topic, "--await-release")
	h.OK("-s", "c", "subscribe", topic)

	r := publish(t, h, "a", topic, "--event", "blocker", "Migration 42 fails on empty tables; do not deploy.")
	if r.Woken != 2 {
		t.Fatalf("blocker woke %d, want 2 (b and c, not the publisher)", r.Woken)
	}
	for _, s := range []struct {
		p    *Proc
		name string
	}{{b, "b"}, {c, "c"}} {
		ev := expectTopicEvent(t, s.p, s.name, wire.EventBlocker, topic, "Migration 42 fails on empty tables; do not deploy.")
		if from, _ := ev["from"].(map[string]any); from == nil || from["name"] != "a" {
			t.Fatalf("%s: blocker from %v, want a", s.name, ev["from"])
		}
	}

	r = publish(t, h, "a", topic, "--event", "decision", "Decided: migrations run in a transaction.")
	if r.Woken != 2 {
		t.Fatalf("decision woke %d, want 2", r.Woken)
	}
	expectTopicEvent(t, b, "b", wire.EventDecision, topic, "Decided: migrations run in a transaction.")
	expectTopicEvent(t, c, "c", wire.EventDecision, topic, "Decided: migrations run in a transaction.")

	// A blocker from another subscriber wakes the others, not itself.
	r = publish(t, h, "c", topic, "--event", "blocker", "c: schema is locked")
	if r.Woken != 2 {
		t.Fatalf("c's blocker woke %d, want 2 (a and b)", r.Woken)
	}
	expectTopicEvent(t, a, "a", wire.EventBlocker, topic, "c: schema is locked")
	expectTopicEvent(t, b, "b", wire.EventBlocker, topic, "c: schema is locked")

	// Exactly once: the next event of every session is its marker; a got
	// nothing from its own publications.
	expectMarker(t, h, a, "a")
	expectMarker(t, h, b, "b")
	expectMarker(t, h, c, "c")

	// The wake-ups were acknowledged once printed: a resumed holder gets
	// none of them again.
	c.Signal(syscall.SIGTERM)
	c2, _ := h.Attach("--resume", cev["id"].(string))
	expectMarker(t, h, c2, "c")

	ti := topicState(t, h, topic)
	if ra := recordFrom(ti, "a"); ra == nil || ra.Event != wire.EventDecision {
		t.Fatalf("a's record %+v, want the decision (latest)", ra)
	}
	if rc := recordFrom(ti, "c"); rc == nil || rc.Event != wire.EventBlocker {
		t.Fatalf("c's record %+v, want the blocker", rc)
	}
}

func TestTopicReleaseWakesOnlyAwaitRelease(t *testing.T) {
	t.Parallel()
	h := newH(t)
	a, _ := h.Attach("--name", "a")
	b, _ := h.Attach("--name", "b")
	c, _ := h.Attach("--name", "c")
	const topic = "browser/shared-profile/tab-4"
	h.OK("-s", "b", "subscribe", topic, "--await-release")
	h.OK("-s", "c", "subscribe", topic)

	publish(t, h, "a", topic, "--resource", "tab-4", "--ownership", "held", "keep this tab open")
	if res := resourceState(topicState(t, h, topic), "tab-4"); res == nil || res.State != wire.OwnershipHeld {
		t.Fatalf("before release: %+v, want held", res)
	}

	r := publish(t, h, "a", topic, "--event", "release", "--resource", "tab-4", "--ownership", "released", "Sign-in check complete; this tab is available.")
	if r.Woken != 1 {
		t.Fatalf("release woke %d, want 1 (only the await-release subscriber)", r.Woken)
	}
	ev := expectTopicEvent(t, b, "b", wire.EventRelease, topic, "Sign-in check complete; this tab is available.")
	if ev["resource"] != "tab-4" || ev["ownership"] != wire.OwnershipReleased {
		t.Fatalf("release wake-up %v, want resource tab-4 ownership released", ev)
	}
	expectMarker(t, h, b, "b")
	expectMarker(t, h, c, "c") // c only sees the record change
	expectMarker(t, h, a, "a")

	ti := topicState(t, h, topic)
	rec := recordFrom(ti, "a")
	if rec == nil || rec.Event != wire.EventRelease || rec.Ownership != wire.OwnershipReleased || rec.Message != "Sign-in check complete; this tab is available." {
		t.Fatalf("a's record after release %+v", rec)
	}
	res := resourceState(ti, "tab-4")
	if res == nil || res.State != wire.OwnershipReleased || res.Holder != nil {
		t.Fatalf("resource after release %+v, want released, no holder", res)
	}
}

func TestTopicRecordReplacedPerSender(t *testing.T) {
	t.Parallel()
	h := newH(t)
	h.Attach("--name", "a")
	h.Attach("--name", "b")
	const topic = "repo/api/status"
	publish(t, h, "a", topic, "a: step 1 running")
	publish(t, h, "b", topic, "b: reviewing")
	publish(t, h, "a", topic, "a: step 2 running")

	ti := topicState(t, h, topic)
	if ti == nil || len(ti.Records) != 2 {
		t.Fatalf("records %+v, want exactly one per sender (2)", ti)
	}
	if ra := recordFrom(ti, "a"); ra == nil || ra.Message != "a: step 2 running" {
		t.Fatalf("a's record %+v, want the newer publication", ra)
	}
	if rb := recordFrom(ti, "b"); rb == nil || rb.Message != "b: reviewing" {
		t.Fatalf("b's record %+v, want it untouched beside a's", rb)
	}
	// Publications on another topic do not touch this one.
	publish(t, h, "a", topic+"-other", "elsewhere")
	if ra := recordFrom(topicState(t, h, topic), "a"); ra == nil || ra.Message != "a: step 2 running" {
		t.Fatalf("a's record %+v changed by a publication on another topic", ra)
	}
	if n := len(allTopics(t, h)); n != 2 {
		t.Fatalf("topics lists %d topics, want 2", n)
	}
}

func TestTopicOlderPublicationIgnored(t *testing.T) {
	t.Parallel()
	h := newH(t)
	_, aev := h.Attach("--name", "a")
	b, _ := h.Attach("--name", "b")
	aid := aev["id"].(string)
	const topic = "repo/api/deploy"
	h.OK("-s", "b", "subscribe", topic)
	cl := clientFor(t, h)

	r, err := cl.Publish(ctx10(t), wire.PublishRequest{From: aid, Topic: topic, Event: wire.EventUpdate, Message: "newer", Version: 2000})
	if err != nil || r.Stale {
		t.Fatalf("publish v2000: %+v, %v", r, err)
	}
	// An older publication arriving late: ignored, and (as a blocker) it
	// wakes nobody.
	r, err = cl.Publish(ctx10(t), wire.PublishRequest{From: aid, Topic: topic, Event: wire.EventBlocker, Message: "older", Version: 1000})
	if err != nil {
		t.Fatalf("publish v1000: %v", err)
	}
	if !r.Stale || r.Woken != 0 {
		t.Fatalf("older publication reply %+v, want stale, woken 0", r)
	}
	expectMarker(t, h, b, "b")
	rec := recordFrom(topicState(t, h, topic), "a")
	if rec == nil || rec.Message != "newer" || rec.Version != 2000 || rec.Event != wire.EventUpdate {
		t.Fatalf("record %+v, want the newer (v2000) one", rec)
	}

	// The hidden CLI flag follows the same rule.
	if pr := publish(t, h, "a", topic, "--record-version", "1500", "still older"); !pr.Stale {
		t.Fatalf("CLI publication with version 1500 < 2000: %+v, want stale", pr)
	}
	out := h.OK("-s", "a", "publish", topic, "--record-version", "1999", "older again")
	if !strings.Contains(out, "Not applied") {
		t.Fatalf("stale CLI output %q does not say it was not applied", out)
	}
	if pr := publish(t, h, "a", topic, "--record-version", "3000", "newest"); pr.Stale {
		t.Fatalf("v3000 reported stale: %+v", pr)
	}
	rec = recordFrom(topicState(t, h, topic), "a")
	if rec == nil || rec.Message != "newest" || rec.Version != 3000 {
		t.Fatalf("record %+v, want v3000 newest", rec)
	}
}

func TestTopicLateSubscriberGetsNoReplay(t *testing.T) {
	t.Parallel()
	h := newH(t)
	h.Attach("--name", "a")
	h.Attach("--name", "b")
	c, _ := h.Attach("--name", "c")
	const topic = "repo/api/migrations"
	if r := publish(t, h, "a", topic, "--event", "blocker", "do not deploy"); r.Woken != 0 {
		t.Fatalf("blocker without subscribers woke %d", r.Woken)
	}
	publish(t, h, "b", topic, "--resource", "db", "--ownership", "held", "b holds the db")

	var sr wire.SubscribeReply
	h.JSON(&sr, "-s", "c", "subscribe", topic, "--await-release")
	if sr.Topic != topic || !sr.AwaitRelease || sr.Existed {
		t.Fatalf("subscribe reply %+v", sr)
	}
	expectMarker(t, h, c, "c") // nothing earlier was replayed

	ti := topicState(t, h, topic)
	if ra := recordFrom(ti, "a"); ra == nil || ra.Event != wire.EventBlocker || ra.Message != "do not deploy" {
		t.Fatalf("late subscriber cannot read a's blocker: %+v", ti)
	}
	if rb := recordFrom(ti, "b"); rb == nil || rb.Event != wire.EventUpdate || rb.Ownership != wire.OwnershipHeld {
		t.Fatalf("late subscriber cannot read b's update: %+v", ti)
	}
	if res := resourceState(ti, "db"); res == nil || res.State != wire.OwnershipHeld || res.Holder == nil || res.Holder.Name != "b" {
		t.Fatalf("resource db %+v, want held by b", res)
	}

	// Subscribing again replays nothing either, and reports it existed.
	var again wire.SubscribeReply
	h.JSON(&again, "-s", "c", "subscribe", topic)
	if !again.Existed || again.AwaitRelease {
		t.Fatalf("resubscribe reply %+v, want existed, plain", again)
	}
	expectMarker(t, h, c, "c")
	// New work after subscribing does arrive.
	publish(t, h, "a", topic, "--event", "decision", "deploy friday")
	expectTopicEvent(t, c, "c", wire.EventDecision, topic, "deploy friday")
	expectMarker(t, h, c, "c")
}

func TestTopicWakeUpIsDurableForOfflineSubscriber(t *testing.T) {
	t.Parallel()
	h := newH(t)
	h.Attach("--name", "a")
	b, bev := h.Attach("--name", "b")
	const topic = "repo/api/migrations"
	h.OK("-s", "b", "subscribe", topic)
	b.Signal(syscall.SIGTERM)
	Eventually(t, topicWait, func() bool {
		s := subscriber(topicState(t, h, topic), "b")
		return s != nil && !s.Connected
	}, "b to show as a disconnected subscriber")

	if r := publish(t, h, "a", topic, "--event", "blocker", "stop the deploy"); r.Woken != 1 {
		t.Fatalf("blocker woke %d, want 1 (b's inbox)", r.Woken)
	}
	b2, _ := h.Attach("--resume", bev["id"].(string))
	expectTopicEvent(t, b2, "b", wire.EventBlocker, topic, "stop the deploy")
	expectMarker(t, h, b2, "b")
}

func TestTopicHolderDisconnectUnavailableAndDurable(t *testing.T) {
	t.Parallel()
	h := newH(t)
	a, aev := h.Attach("--name", "a")
	b, _ := h.Attach("--name", "b")
	aid := aev["id"].(string)
	const topic = "browser/shared-profile/tab-4"
	h.OK("-s", "b", "subscribe", topic, "--await-release")
	h.OK("-s", "a", "subscribe", topic)
	publish(t, h, "a", topic, "--resource", "tab-4", "--ownership", "held", "keep this tab open")

	a.Kill() // the holder vanishes without a word
	var ti *wire.TopicInfo
	Eventually(t, topicWait, func() bool {
		ti = topicState(t, h, topic)
		rec := recordFrom(ti, "a")
		return rec != nil && !rec.SenderConnected
	}, "a's record to show its sender disconnected")
	check := func(when string, ti *wire.TopicInfo) {
		t.Helper()
		rec := recordFrom(ti, "a")
		if rec == nil || rec.Ownership != wire.OwnershipUnavailable || rec.Declared != wire.OwnershipHeld || rec.Message != "keep this tab open" {
			t.Fatalf("%s: a's record %+v, want ownership unavailable (declared held)", when, rec)
		}
		res := resourceState(ti, "tab-4")
		if res == nil || res.State != wire.OwnershipUnavailable || res.Holder == nil || res.Holder.ID != aid {
			t.Fatalf("%s: resource %+v, want unavailable, holder a", when, res)
		}
		if s := subscriber(ti, "b"); s == nil || !s.AwaitRelease {
			t.Fatalf("%s: subscriber b %+v lost", when, s)
		}
		if s := subscriber(ti, "a"); s == nil || s.Connected {
			t.Fatalf("%s: subscriber a %+v, want kept and disconnected", when, s)
		}
	}
	check("after disconnect", ti)
	if txt := h.OK("topics", topic); !strings.Contains(txt, "resource tab-4: unavailable by a") || strings.Contains(txt, "released") {
		t.Fatalf("topics text after disconnect:\n%s", txt)
	}
	// A disconnect is no release: the await-release subscriber is not woken.
	expectMarker(t, h, b, "b")

	// Records and subscriptions survive a broker crash; `topics` spawns a
	// new broker.
	old := h.BrokerPid()
	h.KillBroker()
	check("after broker restart", topicState(t, h, topic))
	if p := h.BrokerPid(); p == 0 || p == old {
		t.Fatalf("broker pid %d after restart (old %d), want a new broker", p, old)
	}
	if ev := b.Event(topicWait); ev["event"] != "reconnected" || ev["name"] != "b" {
		t.Fatalf("b after the broker restart: %v, want reconnected", ev)
	}
	if s := subscriber(topicState(t, h, topic), "b"); s == nil || !s.Connected || !s.AwaitRelease {
		t.Fatalf("subscriber b after reconnecting: %+v", s)
	}

	// The holder comes back: held again (it never released).
	a2, _ := h.Attach("--resume", aid)
	Eventually(t, topicWait, func() bool {
		res := resourceState(topicState(t, h, topic), "tab-4")
		return res != nil && res.State == wire.OwnershipHeld
	}, "tab-4 to be held again once a resumes")

	// Its subscription survived too: a blocker from b wakes it.
	if r := publish(t, h, "b", topic, "--event", "blocker", "b needs the tab"); r.Woken != 1 {
		t.Fatalf("b's blocker woke %d, want 1 (a)", r.Woken)
	}
	expectTopicEvent(t, a2, "a", wire.EventBlocker, topic, "b needs the tab")

	// An explicit release frees the resource and wakes b.
	if r := publish(t, h, "a", topic, "--event", "release", "--resource", "tab-4", "--ownership", "released", "tab free"); r.Woken != 1 {
		t.Fatalf("release woke %d, want 1 (b)", r.Woken)
	}
	expectTopicEvent(t, b, "b", wire.EventRelease, topic, "tab free")
	res := resourceState(topicState(t, h, topic), "tab-4")
	if res == nil || res.State != wire.OwnershipReleased || res.Holder != nil {
		t.Fatalf("after release: %+v, want released, no holder", res)
	}
	expectMarker(t, h, a2, "a")
	expectMarker(t, h, b, "b")
}

func TestTopicInvalidNamesAndFlags(t *testing.T) {
	t.Parallel()
	h := newH(t)
	_, aev := h.Attach("--name", "a")
	aid := aev["id"].(string)
	oneLine := func(what string, r Result, want string) {
		t.Helper()
		if r.Code != 2 {
			t.Fatalf("%s: exit %d, want 2\nstdout: %s\nstderr: %s", what, r.Code, r.Stdout, r.Stderr)
		}
		msg := strings.TrimRight(r.Stderr, "\n")
		if msg == "" || strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "intercom: ") || !strings.Contains(msg, want) {
			t.Fatalf("%s: stderr %q, want one line mentioning %q", what, r.Stderr, want)
		}
	}
	bad := map[string]string{
		"a b":                    "invalid topic",
		"x/*":                    "wildcards are not supported",
		"x/>":                    "wildcards are not supported",
		"x//y":                   "no empty segments",
		"":                       "invalid topic: empty",
		strings.Repeat("t", 300): "longer than 200",
	}
	cl := clientFor(t, h)
	for topic, want := range bad {
		short := topic
		if len(short) > 20 {
			short = short[:20] + "…"
		}
		oneLine("subscribe "+short, h.Run("-s", "a", "subscribe", topic), want)
		oneLine("subscribe --await-release "+short, h.Run("-s", "a", "subscribe", "--await-release", topic), want)
		oneLine("unsubscribe "+short, h.Run("-s", "a", "unsubscribe", topic), want)
		oneLine("publish "+short, h.Run("-s", "a", "publish", topic, "msg"), want)
		oneLine("publish blocker "+short, h.Run("-s", "a", "publish", "--event", "blocker", topic, "msg"), want)
		if topic != "" { // "" means all topics for `topics`
			oneLine("topics "+short, h.Run("topics", topic), want)
		}
		// The broker refuses them too, whatever the client.
		if _, err := cl.Publish(ctx10(t), wire.PublishRequest{From: aid, Topic: topic, Event: wire.EventBlocker, Message: "m"}); !errors.Is(err, &wire.Error{Code: wire.CodeBadRequest}) {
			t.Fatalf("broker publish on %q: %v, want bad_request", short, err)
		}
		if _, err := cl.Subscribe(ctx10(t), aid, topic, true); !errors.Is(err, &wire.Error{Code: wire.CodeBadRequest}) {
			t.Fatalf("broker subscribe to %q: %v, want bad_request", short, err)
		}
	}

	const topic = "repo/ok"
	flags := []struct {
		args []string
		want string
	}{
		{[]string{"--resource", "r"}, "--resource and --ownership go together"},
		{[]string{"--ownership", "held"}, "--resource and --ownership go together"},
		{[]string{"--event", "release", "--resource", "r", "--ownership", "held"}, "release cannot declare --ownership held"},
		{[]string{"--event", "bogus"}, `--event must be one of`},
		{[]string{"--event", "update", "--resource", "r", "--ownership", "mine"}, `--ownership must be one of`},
	}
	for _, f := range flags {
		args := append(append([]string{"-s", "a", "publish", topic}, f.args...), "msg")
		oneLine(strings.Join(f.args, " "), h.Run(args...), f.want)
	}
	oneLine("empty message", h.Run("-s", "a", "publish", topic, "  "), "message is empty")
	// Broker-side checks of the same combinations.
	for _, req := range []wire.PublishRequest{
		{From: aid, Topic: topic, Message: "m", Resource: "r"},
		{From: aid, Topic: topic, Message: "m", Ownership: wire.OwnershipHeld},
		{From: aid, Topic: topic, Message: "m", Event: wire.EventRelease, Resource: "r", Ownership: wire.OwnershipHeld},
		{From: aid, Topic: topic, Message: "m", Event: "bogus"},
		{From: aid, Topic: topic, Message: "m", Resource: "r", Ownership: wire.OwnershipUnavailable},
		{From: aid, Topic: topic, Message: " "},
	} {
		if _, err := cl.Publish(ctx10(t), req); !errors.Is(err, &wire.Error{Code: wire.CodeBadRequest}) {
			t.Fatalf("broker publish %+v: %v, want bad_request", req, err)
		}
	}

	// Without a session.
	oneLine("publish without --session", h.Run("publish", topic, "msg"), "publish needs --session")
	oneLine("subscribe without --session", h.Run("subscribe", topic), "subscribe needs --session")
	oneLine("unsubscribe without --session", h.Run("unsubscribe", topic), "unsubscribe needs --session")

	// Nothing was stored.
	if ts := allTopics(t, h); len(ts) != 0 {
		t.Fatalf("refused requests left topic state: %+v", ts)
	}
	if txt := h.OK("topics"); !strings.Contains(txt, "No topic state") {
		t.Fatalf("topics text %q", txt)
	}
}

func TestTopicDirectMessagesAndRepliesBypassSubscriptions(t *testing.T) {
	t.Parallel()
	h := newH(t)
	a, _ := h.Attach("--name", "a")
	b, _ := h.Attach("--name", "b")
	const topic = "repo/api/migrations"
	h.OK("-s", "a", "subscribe", topic, "--await-release")
	h.OK("-s", "b", "subscribe", topic, "--await-release")
	publish(t, h, "a", topic, "--resource", "db", "--ownership", "held", "a holds db")

	// A direct send from a topic publisher to a subscriber is an ordinary
	// message, delivered as such.
	h.OK("-s", "a", "send", "b", "direct hello")
	ev := b.Event(topicWait)
	if ev["event"] != "message" || ev["text"] != "direct hello" {
		t.Fatalf("b got %v, want an ordinary message", ev)
	}
	for _, k := range []string{"topic", "resource", "ownership"} {
		if _, ok := ev[k]; ok {
			t.Fatalf("direct message carries topic field %q: %v", k, ev)
		}
	}

	// An ask and its reply between two subscribers are ordinary messages.
	ask := h.Start("--json", "-s", "b", "ask", "a", "--delivery", "steer", "is db free?")
	q := a.Event(topicWait)
	if q["event"] != "message" || q["text"] != "is db free?" || q["expects_reply"] != true {
		t.Fatalf("a got %v, want the ask as an ordinary message", q)
	}
	if _, ok := q["topic"]; ok {
		t.Fatalf("ask carries a topic: %v", q)
	}
	h.OK("-s", "a", "reply", "not yet")
	line := ask.Event(topicWait)
	reply, _ := line["reply"].(map[string]any)
	if line["ok"] != true || reply == nil || reply["event"] != "message" || reply["text"] != "not yet" {
		t.Fatalf("ask result %v, want the reply as an ordinary message", line)
	}
	if _, ok := reply["topic"]; ok {
		t.Fatalf("reply carries a topic: %v", reply)
	}
	select {
	case <-ask.Done():
	case <-time.After(topicWait):
		t.Fatalf("ask did not exit after its reply")
	}
	// None of this changed topic state.
	ti := topicState(t, h, topic)
	if len(ti.Records) != 1 || recordFrom(ti, "a") == nil || recordFrom(ti, "a").Message != "a holds db" {
		t.Fatalf("topic state changed by direct messages: %+v", ti)
	}
	// b saw nothing topic-shaped: up to a marker, at most the reply to its
	// own ask (should its holder print it too), as an ordinary message.
	marker := fmt.Sprintf("marker-b-%d", markerN.Add(1))
	h.OK("send", "b", marker)
	for {
		ev := b.Event(topicWait)
		if _, ok := ev["topic"]; ok || ev["event"] != "message" {
			t.Fatalf("b got %v, want only ordinary messages", ev)
		}
		if ev["text"] == marker {
			break
		}
		if ev["text"] != "not yet" {
			t.Fatalf("b got unexpected %v before the marker", ev)
		}
	}
	expectMarker(t, h, a, "a")
}

func TestTopicUnsubscribeStopsWakeUps(t *testing.T) {
	t.Parallel()
	h := newH(t)
	h.Attach("--name", "a")
	b, _ := h.Attach("--name", "b")
	c, _ := h.Attach("--name", "c")
	const topic = "repo/api/migrations"
	h.OK("-s", "b", "subscribe", topic, "--await-release")
	h.OK("-s", "c", "subscribe", topic)

	publish(t, h, "a", topic, "--event", "blocker", "first")
	expectTopicEvent(t, b, "b", wire.EventBlocker, topic, "first")
	expectTopicEvent(t, c, "c", wire.EventBlocker, topic, "first")

	out := h.OK("-s", "b", "unsubscribe", topic)
	if !strings.Contains(out, "Unsubscribed from "+topic) {
		t.Fatalf("unsubscribe output %q", out)
	}
	if s := subscriber(topicState(t, h, topic), "b"); s != nil {
		t.Fatalf("b still listed as subscriber: %+v", s)
	}
	if r := publish(t, h, "a", topic, "--event", "blocker", "second"); r.Woken != 1 {
		t.Fatalf("blocker after unsubscribe woke %d, want 1 (c)", r.Woken)
	}
	if r := publish(t, h, "a", topic, "--event", "release", "third"); r.Woken != 0 {
		t.Fatalf("release after unsubscribe woke %d, want 0", r.Woken)
	}
	expectTopicEvent(t, c, "c", wire.EventBlocker, topic, "second")
	expectMarker(t, h, b, "b")
	expectMarker(t, h, c, "c")

	// Unsubscribing again is an error: nothing to remove.
	if r := h.Run("-s", "b", "unsubscribe", topic); r.Code == 0 || !strings.Contains(r.Stderr, "not subscribed") {
		t.Fatalf("second unsubscribe: exit %d, stderr %q", r.Code, r.Stderr)
	}
}

// TestTopicRetriedPublicationAppliedOnce: a decision whose reply was lost
// (here: published without waiting for the reply, as if the broker died
// right after storing it) and then retried with the same client id wakes
// its subscribers once; the retry answers duplicate with the first seq. The
// CLI's --client-id does the same.
func TestTopicRetriedPublicationAppliedOnce(t *testing.T) {
	t.Parallel()
	h := newH(t)
	sub, _ := h.Attach("--name", "sub")
	h.Attach("--name", "pub")
	const topic = "repo/api/release"
	h.OK("-s", "sub", "subscribe", topic)

	c := msgClient(t, h)
	ctx, cancel := context.WithTimeout(context.Background(), msgWait)
	defer cancel()
	rows, err := c.List(ctx, intercom.ListOptions{Scope: "all"})
	if err != nil {
		t.Fatal(err)
	}
	var pubID string
	for _, r := range rows {
		if r.Name == "pub" {
			pubID = r.ID
		}
	}
	req := wire.PublishRequest{From: pubID, Topic: topic, Event: wire.EventDecision, Message: "Ship on Friday.", ClientMsgID: "rel-7"}
	data, _ := json.Marshal(req)
	if err := c.Conn().Publish(wire.SubjPublish, data); err != nil { // the reply goes nowhere
		t.Fatal(err)
	}
	expectTopicEvent(t, sub, "sub", wire.EventDecision, topic, "Ship on Friday.")
	res, err := c.Publish(ctx, req) // the retry
	if err != nil {
		t.Fatal(err)
	}
	if !res.Duplicate || res.Woken != 0 || res.Seq == 0 {
		t.Fatalf("retry answered %+v, want duplicate with the first seq, nobody woken", res)
	}
	// CLI: the same key twice.
	r := publish(t, h, "pub", topic, "--event", "decision", "--client-id", "rel-8", "Ship on Monday.")
	if r.Woken != 1 {
		t.Fatalf("first CLI publication woke %d, want 1", r.Woken)
	}
	expectTopicEvent(t, sub, "sub", wire.EventDecision, topic, "Ship on Monday.")
	if out := h.OK("-s", "pub", "publish", topic, "--event", "decision", "--client-id", "rel-8", "Ship on Monday."); !strings.Contains(out, "Already published") {
		t.Fatalf("CLI retry printed %q, want \"Already published\"", out)
	}
	// Nothing else reached the subscriber: its next event is the marker.
	expectMarker(t, h, sub, "sub")
	if ti := topicState(t, h, topic); recordFrom(ti, "pub") == nil || recordFrom(ti, "pub").Message != "Ship on Monday." {
		t.Fatalf("pub's record %+v, want the latest publication", recordFrom(ti, "pub"))
	}
}
