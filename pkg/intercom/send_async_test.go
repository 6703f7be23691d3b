package intercom

import (
	"errors"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/pkg/wire"
)

func waitingFutures(a *asyncSends, tokens ...uint64) map[uint64]*SendFuture {
	a.prefix, a.waiting = "_INBOX.t.", map[uint64]*SendFuture{}
	fs := map[uint64]*SendFuture{}
	for _, tok := range tokens {
		f := &SendFuture{token: tok, done: make(chan struct{})}
		a.waiting[tok], fs[tok] = f, f
	}
	return fs
}

func answered(t *testing.T, f *SendFuture) bool {
	t.Helper()
	select {
	case <-f.done:
		return true
	default:
		return false
	}
}

// A batch of replies completes each future it names with its own reply; a
// lone reply, an old broker's whole one and a refusal complete theirs.
func TestOnReplyBatchAndSingle(t *testing.T) {
	var a asyncSends
	fs := waitingFutures(&a, 10, 11, 12, 13, 14)
	lean := func(id string) []byte {
		return wire.AppendSendReply(nil, &wire.SendReply{ID: id, To: wire.Session{ID: "s", Name: "sink"}})
	}
	var batch []byte
	batch = wire.AppendBatchedReply(batch, "a", lean("m10")) // 10 in base 36
	batch = wire.AppendBatchedReply(batch, "b", lean("m11"))
	batch = wire.AppendBatchedReply(batch, "zz", lean("nobody's")) // not waiting: ignored
	a.onReply(&nats.Msg{Subject: "_INBOX.t." + wire.ReplyBatchToken, Data: batch})
	for tok, id := range map[uint64]string{10: "m10", 11: "m11"} {
		if !answered(t, fs[tok]) || fs[tok].err != nil || fs[tok].rep == nil || fs[tok].rep.ID != id || fs[tok].rep.To.Name != "sink" {
			t.Fatalf("future %d: %+v, %v", tok, fs[tok].rep, fs[tok].err)
		}
	}
	if answered(t, fs[12]) {
		t.Fatal("future 12 answered by a batch that does not name it")
	}
	// A broker before lean replies: the whole row, by reflection.
	a.onReply(&nats.Msg{Subject: "_INBOX.t.c", Data: []byte(`{"result":{"id":"m12","to":{"id":"s","name":"sink","cwd":"/w","last_seen":"2026-12-01T11:00:00Z","connected":true,"last_intercom_activity":null},"offline":false,"duplicate":false,"peer_busy":false,"queued":false,"remote_stored":false}}`)})
	if f := fs[12]; f.err != nil || f.rep == nil || f.rep.ID != "m12" || f.rep.To.Cwd != "/w" || !f.rep.To.Connected {
		t.Fatalf("old reply read as %+v, %v", f.rep, f.err)
	}
	a.onReply(&nats.Msg{Subject: "_INBOX.t.d", Data: []byte(`{"error":{"code":"not_found","message":"no session x"}}`)})
	if f := fs[13]; !errors.Is(f.err, ErrNotFound) {
		t.Fatalf("refusal read as %v", f.err)
	}
	h := nats.Header{}
	h.Set("Status", "503")
	a.onReply(&nats.Msg{Subject: "_INBOX.t.e", Header: h})
	if f := fs[14]; !errors.Is(f.err, nats.ErrNoResponders) {
		t.Fatalf("no responders read as %v", f.err)
	}
	if len(a.waiting) != 0 {
		t.Fatalf("%d futures still waiting", len(a.waiting))
	}
}

// Client message ids are distinct and of the random ids' form.
func TestMsgIDs(t *testing.T) {
	var g msgIDs
	seen := map[string]bool{}
	for range 1000 {
		id := g.next()
		if len(id) != 32 || seen[id] {
			t.Fatalf("id %q (seen %v)", id, seen[id])
		}
		seen[id] = true
	}
	var other msgIDs
	if other.next()[:16] == g.next()[:16] {
		t.Fatal("two clients share an id prefix")
	}
}
