package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/internal/brokertest"
	"github.com/intercom-dev/intercom/internal/certs"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Fuzz targets for every message another host can send or answer, each
// driving the real handlers: alpha's bridge (a side on a link) in front of
// a real broker, and "beta" as a raw NATS client on the same link. A panic
// anywhere (bridge or broker, both in this process) fails the target, and
// after each input the broker must still answer.

// rig is alpha's bridge and broker, with beta on the link.
type rig struct {
	t     testing.TB
	side  *side
	local *intercom.Client
	beta  *nats.Conn
	alice string // a local session of alpha
	ctx   context.Context
}

const bobID = "0123456789abcdef" // beta's session bob

// newRig starts the rig; alpha's broker leaves the subjects without
// unanswered (a broker that predates them).
func newRig(t testing.TB, without ...string) *rig {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, err := server.NewServer(&server.Options{DontListen: true, NoLog: true, NoSigs: true, MaxPayload: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("link server not ready")
	}
	t.Cleanup(srv.Shutdown)
	dial := func(host string) *nats.Conn {
		nc, err := nats.Connect("", nats.InProcessServer(srv), nats.CustomInboxPrefix(inboxPrefix(host)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	home := brokertest.StartWithout(t, without...)
	local := brokertest.Connect(t, home)
	lim := wire.DefaultBridgeLimits()
	lim.MsgsPerSec, lim.BytesPerSec = 1e9, 1<<40 // rates are not what is fuzzed: every input reaches the handlers
	opts := Options{Name: "alpha", Peers: certs.Peers{Names: []string{"beta"}}, Limits: lim,
		Log: slog.New(slog.DiscardHandler), Link: &certs.Link{Revocation: &certs.Revocation{}}}
	link := dial("alpha")
	r := &rig{t: t, local: local, beta: dial("beta"), ctx: ctx}
	r.side = newSide(ctx, opts, link, local, newLinkState("join", "test", opts))
	if err := r.side.subscribe(); err != nil {
		t.Fatal(err)
	}
	s, err := local.Attach(ctx, intercom.AttachOptions{Name: "alice", Cwd: "/proj"})
	if err != nil {
		t.Fatal(err)
	}
	r.alice = s.ID()
	r.presence(mustJSON(presenceMsg{Version: "v1", Full: true, Sessions: []wire.Session{{ID: bobID, Name: "bob",
		Status: "idle", State: wire.StateIdle, Connected: true, AcceptsAsks: true}}}))
	return r
}

func mustJSON(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}

// presence hands beta's broadcast to alpha's bridge and reports to the
// broker, as a tick does.
func (r *rig) presence(data []byte) {
	r.side.mu.Lock()
	if p := r.side.peerLocked("beta"); p != nil {
		p.pres.SetLimit(1e9) // the presence rate is not what is fuzzed
		p.pres.SetBurst(1 << 30)
		p.presBytes.SetLimit(1e12)
		p.presBytes.SetBurst(1 << 40)
	}
	r.side.mu.Unlock()
	r.side.onPresence(&nats.Msg{Subject: presSubject("beta"), Data: data})
	r.side.reportHosts(r.ctx)
}

// request sends beta's request op with data to alpha and returns the raw
// answer (nil if none came).
func (r *rig) request(op string, data []byte) []byte {
	msg, err := r.beta.Request(reqSubject("alpha", "beta", op), data, 10*time.Second)
	if err != nil {
		return nil
	}
	return msg.Data
}

// answer makes beta answer alpha's requests of op with data.
func (r *rig) answer(op string, data []byte) func() {
	sub, err := r.beta.Subscribe(reqSubject("beta", "alpha", op), func(m *nats.Msg) { _ = m.Respond(data) })
	if err != nil {
		r.t.Fatal(err)
	}
	if err := r.beta.Flush(); err != nil {
		r.t.Fatal(err)
	}
	return func() { _ = sub.Unsubscribe() }
}

// alive fails unless the broker answers.
func (r *rig) alive(t testing.TB, what string, data []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(r.ctx, 20*time.Second)
	defer cancel()
	if _, err := r.local.List(ctx, intercom.ListOptions{Scope: "all"}); err != nil {
		t.Fatalf("broker after %s %q: %v", what, data, err)
	}
}

// The seeds of each target: valid shapes, the shapes that lack a part, and
// values a hostile host tries.
var (
	replySeeds = []string{`{"result":{}}`, `{"result":null}`, `{}`, `[]`, `null`, `{"error":{}}`, `{"error":null,"result":{"id":""}}`,
		`{"error":{"code":"quota_exceeded","message":"\u001b]0;pwned\u0007"}}`, `{"error":{"code":"internal"}}`,
		`{"result":{"publish":{"topic":"x","seq":1}}}`, `{"result":{"subscribe":{"topic":"x"}}}`,
		`{"result":{"topics":[{"topic":"x","records":null,"resources":[{"resource":"r","holder":null}]}],"next_offset":-1}}`,
		`{"result":{"id":"m1","to":{"id":"x"},"duplicate":true}}`, `{"result":{"to":null}}`, "\x00", ""}
	deliverSeeds = []string{
		`{"message":{"id":"m1","from":{"id":"0123456789abcdef","name":"mallory","cwd":"/m"},"to":"alice","text":"hi","delivery":"steer"}}`,
		`{"message":{"id":"m2","from":{"id":"0123456789abcdef","name":"m"},"to":"alice","reply_to":"x","expects_reply":true}}`,
		`{"message":{"id":"m3","from":{"id":"0123456789abcdef","name":"m"},"to":"alice","topic":"t","event":"release","resource":"r"}}`,
		`{"message":null}`, `{}`, `{"message":{"attachments":[null]}}`, `{"message":{"from":null,"to":"alice"}}`, `[]`, `null`,
	}
	topicSeeds = []string{
		`{"op":"topics"}`, `{"op":"topics","topic":"shared","offset":-5}`,
		`{"op":"publish","from":{"id":"0123456789abcdef","name":"m"},"publish":{"topic":"shared/x","message":"m","resource":"db","ownership":"held"}}`,
		`{"op":"publish","from":{"id":"0123456789abcdef","name":"m"},"publish":{"topic":"shared/x","event":"release","resource":"db","ownership":"released"}}`,
		`{"op":"subscribe","from":{"id":"0123456789abcdef","name":"m"},"subscribe":{"topic":"shared/x","await_release":true}}`,
		`{"op":"unsubscribe","from":{"id":"0123456789abcdef","name":"m"},"subscribe":null}`,
		`{"op":"publish","from":{"id":"0123456789abcdef","name":"m"},"publish":null}`, `{"op":"subscribe"}`, `{}`, `[]`, `null`,
	}
	presenceSeeds = []string{
		`{"v":"v2","full":true,"sessions":[{"id":"0123456789abcdef","name":"bob","connected":true}]}`,
		`{"v":"v3","full":true,"sessions":null}`, `{"v":"v4","full":true,"sessions":[null,{}]}`, `{"v":"v1"}`,
		`{"v":"v5","full":true,"sessions":[{"id":"x@gamma","name":"a\nb","cwd":"\u001b[2J"}]}`, `{}`, `[]`, `null`,
	}
)

func seed(f *testing.F, seeds []string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
}

// FuzzLinkDeliver: a delivery from beta, through alpha's bridge to its broker.
func FuzzLinkDeliver(f *testing.F) {
	seed(f, deliverSeeds)
	r := newRig(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		r.request(opDeliver, data)
		r.alive(t, "a delivery", data)
	})
}

// FuzzLinkTopicRequest: a topic operation from beta.
func FuzzLinkTopicRequest(f *testing.F) {
	seed(f, topicSeeds)
	r := newRig(f)
	r.side.opts.Exports = []Export{{Prefix: "shared"}}
	f.Fuzz(func(t *testing.T, data []byte) {
		r.request(opTopic, data)
		r.alive(t, "a topic operation", data)
	})
}

// FuzzLinkPresence: beta's presence broadcast, reported to alpha's broker.
func FuzzLinkPresence(f *testing.F) {
	seed(f, presenceSeeds)
	r := newRig(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		r.presence(data)
		r.alive(t, "a presence", data)
		for _, row := range r.rows(t) {
			if err := wire.ValidateName(strings.TrimSuffix(row.Name, "@beta")); err != nil {
				t.Fatalf("presence %q listed as %q: %v", data, row.Name, err)
			}
		}
	})
}

// rows are the broker's rows of beta.
func (r *rig) rows(t testing.TB) []wire.Session {
	ctx, cancel := context.WithTimeout(r.ctx, 20*time.Second)
	defer cancel()
	rows, err := r.local.List(ctx, intercom.ListOptions{Scope: "all", IncludeDisconnected: true})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	var out []wire.Session
	for _, row := range rows {
		if row.Host == "beta" {
			out = append(out, row)
		}
	}
	return out
}

// FuzzLinkTopicReply: beta's answer to a topic operation of alice's on
// "shared/x@beta" (the operation chosen by the input's length).
func FuzzLinkTopicReply(f *testing.F) {
	for i, s := range replySeeds {
		for op := range 4 {
			f.Add([]byte(s), uint8(i+op))
		}
	}
	r := newRig(f)
	f.Fuzz(func(t *testing.T, data []byte, op uint8) {
		stop := r.answer(opTopic, data)
		defer stop()
		ctx, cancel := context.WithTimeout(r.ctx, 20*time.Second)
		defer cancel()
		switch op % 4 {
		case 0:
			_, _ = r.local.Publish(ctx, wire.PublishRequest{From: r.alice, Topic: "shared/x@beta", Message: "m", Resource: "db", Ownership: wire.OwnershipHeld})
		case 1:
			_, _ = r.local.Subscribe(ctx, r.alice, "shared/x@beta", true)
		case 2:
			_ = r.local.Unsubscribe(ctx, r.alice, "shared/x@beta")
		case 3:
			_, _ = r.local.Topics(ctx, "shared/x@beta")
		}
		r.alive(t, "a topic reply", data)
	})
}

// FuzzLinkDeliverReply: beta's answer to a forwarded message (stored,
// refused, a quota...), which alpha's bridge settles with its broker (the
// ack). The broker counts beta down, so a send is queued at once and the
// target forwards it itself.
func FuzzLinkDeliverReply(f *testing.F) {
	seed(f, replySeeds)
	r := newRig(f)
	p := r.side.peer("beta")
	r.side.mu.Lock()
	p.reported = false // the bridge's own drain leaves the outbox alone
	r.side.mu.Unlock()
	bob := []wire.Session{{ID: bobID, Name: "bob", Status: "idle", State: wire.StateIdle, Connected: true}}
	f.Fuzz(func(t *testing.T, data []byte) {
		stop := r.answer(opDeliver, data)
		defer stop()
		ctx, cancel := context.WithTimeout(r.ctx, 20*time.Second)
		defer cancel()
		if _, err := intercom.Call[wire.Empty](ctx, r.local, wire.SubjBridgePresence, wire.BridgePresence{Host: "beta", Sessions: bob}); err != nil {
			t.Fatal(err) // beta known, its link down (the purge below forgets it)
		}
		if _, err := r.local.Send(ctx, wire.SendRequest{From: r.alice, To: "bob@beta", Text: "hello"}); err != nil {
			t.Fatalf("send to bob@beta: %v", err)
		}
		box, err := intercom.Call[wire.InboxReply](ctx, r.local, wire.SubjBridgeOutbox, wire.BridgeOutboxRequest{Host: "beta", Limit: 1})
		if err != nil || len(box.Messages) != 1 {
			t.Fatalf("beta's outbox: %+v, %v", box, err)
		}
		r.side.forward(ctx, p, box.Messages[0])
		r.alive(t, "a delivery reply", data)
		// What a reply kept queued is dropped, so that each input meets one message.
		if _, err := intercom.Call[wire.BridgePurgeReply](ctx, r.local, wire.SubjBridgePurge, wire.BridgePurge{Host: "beta", Outbox: true}); err != nil {
			t.Fatalf("purge: %v", err)
		}
	})
}

// batchStore is beta storing every batch alpha forwards: the texts in the
// order they came, and how many batches carried them.
type batchStore struct {
	mu      sync.Mutex
	texts   []string
	batches int
}

// storeBatches makes beta answer alpha's batches as stored, recording them.
func (r *rig) storeBatches(t *testing.T) *batchStore {
	t.Helper()
	b := &batchStore{}
	sub, err := r.beta.Subscribe(reqSubject("beta", "alpha", opDeliverBatch), func(m *nats.Msg) {
		var req wire.BridgeDeliverBatch
		if err := json.Unmarshal(m.Data, &req); err != nil {
			t.Error(err)
		}
		var out []wire.Reply[wire.SendReply]
		b.mu.Lock()
		b.batches++
		for _, msg := range req.Messages {
			b.texts = append(b.texts, msg.Text)
			out = append(out, wire.Reply[wire.SendReply]{Result: &wire.SendReply{ID: msg.ID}})
		}
		b.mu.Unlock()
		_ = m.Respond(mustJSON(wire.Reply[wire.BridgeDeliverBatchReply]{Result: &wire.BridgeDeliverBatchReply{Results: out}}))
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := r.beta.Flush(); err != nil {
		t.Fatal(err)
	}
	return b
}

// sendSerially sends m0…m<n-1> from alice to bob@beta, one after another,
// each reported stored there, and returns their texts.
func (r *rig) sendSerially(t *testing.T, n int) []string {
	t.Helper()
	var want []string
	for i := range n {
		ctx, cancel := context.WithTimeout(r.ctx, 20*time.Second)
		rep, err := r.local.Send(ctx, wire.SendRequest{From: r.alice, To: "bob@beta", Text: fmt.Sprintf("m%d", i)})
		cancel()
		if err != nil || !rep.RemoteStored {
			t.Fatalf("send %d: %+v, %v; want stored on beta", i, rep, err)
		}
		want = append(want, fmt.Sprintf("m%d", i))
	}
	return want
}
