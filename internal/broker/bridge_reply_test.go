package broker

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// answerTopicRPC plays beta's bridge: every topic operation for beta gets
// the reply raw.
func (w *world) answerTopicRPC(raw string) {
	w.t.Helper()
	sub, err := w.c.Conn().Subscribe(wire.BridgeRPC("beta"), func(m *nats.Msg) { _ = m.Respond([]byte(raw)) })
	if err != nil {
		w.t.Fatal(err)
	}
	if err := w.c.Conn().Flush(); err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { _ = sub.Unsubscribe() })
}

// A remote host's answer to a topic operation is decoded into the shape the
// operation needs: a reply without it (`{"result":{}}`, the wrong op's
// part, a bad listing) is an error for the local session, never a crash of
// the broker. (On main it panicked: nil dereference in onPublish and
// forwardSubscription.)
func TestRemoteTopicReplyChecked(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		`{"result":{}}`,
		`{"result":{"subscribe":{"topic":"x"}}}`,
		`{"result":{"publish":{"topic":"x","seq":1}}}`,
		`{"result":{"topics":[{"topic":"shared/x\u001b[2J"}]}}`,
		`{"result":{"topics":[],"next_offset":-5}}`,
		`{"result":null}`, `{}`, `[]`, `null`, `{"error":{}}`,
	} {
		t.Run(raw, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			ctx := t.Context()
			a := w.attach("alpha")
			w.reportBeta(true)
			w.answerTopicRPC(raw)
			_, perr := w.c.Publish(ctx, wire.PublishRequest{From: a.ID(), Topic: "shared/x@beta", Message: "m"})
			_, serr := w.c.Subscribe(ctx, a.ID(), "shared/x@beta", true)
			uerr := w.c.Unsubscribe(ctx, a.ID(), "shared/x@beta")
			_, terr := w.c.Topics(ctx, "shared/x@beta")
			errs := map[string]error{"publish": perr, "subscribe": serr, "unsubscribe": uerr, "topics": terr}
			for op, err := range errs {
				ok := err == nil
				switch {
				case op == "publish" && raw == `{"result":{"publish":{"topic":"x","seq":1}}}`,
					(op == "subscribe" || op == "unsubscribe") && raw == `{"result":{"subscribe":{"topic":"x"}}}`:
					if !ok {
						t.Errorf("%s with a well-formed reply: %v", op, err)
					}
				case op == "topics" && strings.HasPrefix(raw, `{"result":{"`) && !strings.Contains(raw, `"topics"`),
					op == "topics" && raw == `{"result":{}}`: // no topics: an empty listing
					if !ok {
						t.Errorf("%s with an empty listing: %v", op, err)
					}
				default:
					if ok {
						t.Errorf("%s answered %s: accepted", op, raw)
					}
				}
			}
			// The broker is alive and answers.
			if _, err := w.c.Topics(ctx, ""); err != nil {
				t.Fatalf("broker after the replies: %v", err)
			}
		})
	}
}

// A bridged host's topic listings are bounded by what they read, not by
// its message rate (issue 29): listings of a big store are refused with
// quota_exceeded once the host read its share (on main every listing ran,
// and a flood within the rate kept the broker at 96 % of a core). The
// budget's clock is the test's.
func TestRemoteListingCostBounded(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := t.Context()
	a := w.attach("alpha")
	w.b.lists.mu.Lock()
	frozen := time.Now()
	w.b.lists.clock = func() time.Time { return frozen } // nothing refills: the count is exact
	w.b.lists.mu.Unlock()
	const records = 250
	for i := range records {
		if _, err := w.c.Publish(ctx, wire.PublishRequest{From: a.ID(), Topic: fmt.Sprintf("shared/t%d", i), Message: "m"}); err != nil {
			t.Fatal(err)
		}
	}
	list := func() error {
		_, err := call[wire.BridgeTopicReply](t, w.c, wire.SubjBridgeTopic, wire.BridgeTopic{Host: "beta", Op: "topics", Exports: []string{"shared"}})
		return err
	}
	listed := 0
	for ; listed < 2*listItemsBurst/records; listed++ {
		if err := list(); err != nil {
			wantCode(t, "a listing over the budget", err, wire.CodeQuota)
			break
		}
	}
	if listed != listItemsBurst/records {
		t.Fatalf("%d listings of %d records before a refusal; want the budget's %d", listed, records, listItemsBurst/records)
	}
	// The budget refills with time.
	w.b.lists.mu.Lock()
	frozen = frozen.Add(time.Second)
	w.b.lists.mu.Unlock()
	if err := list(); err != nil {
		t.Fatalf("a listing a second later: %v", err)
	}
	// Another host's budget is its own.
	if _, err := call[wire.BridgeTopicReply](t, w.c, wire.SubjBridgeTopic, wire.BridgeTopic{Host: "gamma", Op: "topics", Exports: []string{"shared"}}); err != nil {
		t.Fatalf("gamma's listing: %v", err)
	}
}

// The bookkeeping a bridged host's messages leave behind (their dedupe and
// ack keys, kept for the retry memory after the message is read) counts in
// the host's quota (issue 29): a host whose messages are read at once is
// still refused once that bookkeeping passes its --max-inbox-bytes (on main
// it never was: ≈ 864 bytes a message for 24 h, uncounted).
func TestRemoteBookkeepingCounted(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := t.Context()
	a := w.attach("alpha")
	lim := wire.DefaultBridgeLimits()
	lim.InboxBytes = 8 * bookkeepingBytes
	stored := 0
	for i := range 20 {
		in := wire.Message{ID: fmt.Sprintf("r%d", i), From: wire.Peer{ID: bob, Name: "bob"}, To: "alpha", Text: "hi", Delivery: wire.DeliverySteer}
		_, err := call[wire.SendReply](t, w.c, wire.SubjBridgeDeliver, wire.BridgeDeliver{Host: "beta", Message: in, Limits: &lim})
		if err != nil {
			wantCode(t, "a message over the bookkeeping quota", err, wire.CodeQuota)
			if !strings.Contains(err.Error(), "delivery records") {
				t.Fatalf("refusal %v, want the delivery records named", err)
			}
			break
		}
		stored++
		if err := a.Ack(ctx, recv(t, a).ID); err != nil { // read at once: the inbox quota is not what refuses
			t.Fatal(err)
		}
	}
	if stored != 8 {
		t.Fatalf("%d messages stored before a refusal, want 8", stored)
	}
	// A retry of a stored message is still answered as a duplicate.
	in := wire.Message{ID: "r0", From: wire.Peer{ID: bob, Name: "bob"}, To: "alpha", Text: "hi", Delivery: wire.DeliverySteer}
	if res, err := call[wire.SendReply](t, w.c, wire.SubjBridgeDeliver, wire.BridgeDeliver{Host: "beta", Message: in, Limits: &lim}); err != nil || !res.Duplicate {
		t.Fatalf("a retry: %+v, %v", res, err)
	}
}

// The bookkeeping expires with its keys, one slice of the retry memory at a
// time.
func TestKeptLogExpires(t *testing.T) {
	var k keptLog
	every := 24 * time.Hour
	t0 := time.Date(2026, 1, 1, 0, 30, 0, 0, time.UTC)
	k.add(t0, every, 100)
	k.add(t0.Add(3*time.Hour), every, 10)
	if got := k.total(t0.Add(3*time.Hour), every); got != 110 {
		t.Fatalf("total %d, want 110", got)
	}
	if got := k.total(t0.Add(24*time.Hour), every); got != 10 {
		t.Fatalf("a day later: %d, want the later 10", got)
	}
	if got := k.total(t0.Add(28*time.Hour), every); got != 0 {
		t.Fatalf("28 h later: %d, want 0", got)
	}
}
