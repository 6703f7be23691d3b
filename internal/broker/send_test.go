package broker

import (
	"errors"
	"strings"
	"testing"

	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Sending, delivering and acknowledging.

func TestSendPushedAckedAndGone(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a, z := w.attach("alpha"), w.attach("zulu")
	res := w.send(a, "zulu", "hello")
	if res.ID == "" || res.Offline || res.Duplicate || res.To.ID != z.ID() {
		t.Fatalf("send reply %+v", res)
	}
	m := recv(t, z)
	if m.ID != res.ID || m.Text != "hello" || m.From.ID != a.ID() || m.Delivery != wire.DeliverySteer {
		t.Fatalf("pushed %+v, want hello from alpha as steer", m)
	}
	if n := w.b.ledger.queuedCounts()[z.ID()]; n != 1 {
		t.Fatalf("queued before the ack: %d, want 1", n)
	}
	if n, err := w.c.Ack(t.Context(), z.ID(), m.ID); err != nil || n != 1 {
		t.Fatalf("ack: %d, %v", n, err)
	}
	if n, err := w.c.Ack(t.Context(), z.ID(), m.ID); err != nil || n != 0 {
		t.Fatalf("second ack: %d, %v; want 0 acked", n, err)
	}
	if n := w.b.ledger.queuedCounts()[z.ID()]; n != 0 {
		t.Fatalf("queued after the ack: %d, want 0", n)
	}
	if msgs, err := w.c.Peek(t.Context(), z.ID(), 0); err != nil || len(msgs) != 0 {
		t.Fatalf("inbox after the ack: %v, %v", msgs, err)
	}
	rows, err := w.c.List(t.Context(), intercom.ListOptions{Self: a.ID(), Cwd: "/proj"})
	if err != nil || len(rows) != 2 || !rows[0].Self || rows[0].LastIntercomActivity == nil {
		t.Fatalf("list after a send: %+v, %v", rows, err)
	}
}

func TestSendOfflineThenFetched(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a := w.attach("alpha")
	z := w.attach("zulu", func(o *intercom.AttachOptions) { o.NoDeliver = true })
	if err := z.Detach(t.Context()); err != nil {
		t.Fatal(err)
	}
	res := w.send(a, z.ID(), "while you were out")
	if !res.Offline {
		t.Fatalf("send to a detached session: %+v, want offline", res)
	}
	msgs, err := w.c.Inbox(t.Context(), z.ID(), 0)
	if err != nil || len(msgs) != 1 || msgs[0].Text != "while you were out" {
		t.Fatalf("inbox: %+v, %v", msgs, err)
	}
	if err := w.c.AckShown(t.Context(), z.ID(), msgs[0].ID); err != nil {
		t.Fatal(err)
	}
	tr, err := w.c.Trace(t.Context(), res.ID)
	if err != nil || tr.State != "acked" || len(tr.Fetched) != 1 || len(tr.Pushed) != 0 {
		t.Fatalf("trace of a fetched message: %+v, %v", tr, err)
	}
}

func TestSendRetryWithClientIDStoredOnce(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a, z := w.attach("alpha"), w.attach("zulu")
	first := w.send(a, "zulu", "once", func(r *wire.SendRequest) { r.ClientMsgID = "c-1" })
	again := w.send(a, "zulu", "once", func(r *wire.SendRequest) { r.ClientMsgID = "c-1" })
	if !again.Duplicate || again.ID != first.ID {
		t.Fatalf("retry: %+v, want duplicate of %s", again, first.ID)
	}
	if m := recv(t, z); m.ID != first.ID {
		t.Fatalf("pushed %s, want %s", m.ID, first.ID)
	}
	select {
	case m := <-z.Messages():
		t.Fatalf("the retry was pushed too: %+v", m)
	default:
	}
	if n := w.b.ledger.queuedCounts()[z.ID()]; n != 1 {
		t.Fatalf("stored %d messages, want 1", n)
	}
}

// An ack of an id that was never stored is remembered: a send of that id
// arriving later is answered duplicate and not shown again.
func TestAckBeforeStoreRemembered(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a, z := w.attach("alpha"), w.attach("zulu")
	scope := a.ID()
	id := messageID(scope, "c-early")
	if n, err := w.c.Ack(t.Context(), z.ID(), id); err != nil || n != 0 {
		t.Fatalf("ack of an unstored id: %d, %v", n, err)
	}
	res := w.send(a, "zulu", "pushed early, then the broker died", func(r *wire.SendRequest) { r.ClientMsgID = "c-early" })
	if !res.Duplicate || res.ID != id {
		t.Fatalf("send after its ack: %+v, want duplicate %s", res, id)
	}
	tr, err := w.c.Trace(t.Context(), id)
	if err != nil || tr.State != "acked" {
		t.Fatalf("trace: %+v, %v", tr, err)
	}
}

func TestSendQueuedWaitsForIdle(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a := w.attach("alpha")
	z := w.attach("zulu", func(o *intercom.AttachOptions) { o.Status = "thinking" })
	w.send(a, "zulu", "later", func(r *wire.SendRequest) { r.Delivery = wire.DeliveryQueue })
	w.send(a, "zulu", "fyi", func(r *wire.SendRequest) { r.Delivery = wire.DeliveryPassive })
	if m := recv(t, z); m.Text != "fyi" {
		t.Fatalf("first push to a busy session: %q, want the passive one", m.Text)
	}
	if err := z.SetState(t.Context(), "idle", nil); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, z); m.Text != "later" {
		t.Fatalf("push once idle: %q, want the queued one", m.Text)
	}
}

func TestSendReplaceKeepsTheNewest(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a := w.attach("alpha")
	z := w.attach("zulu", func(o *intercom.AttachOptions) { o.NoDeliver = true })
	replace := func(r *wire.SendRequest) { r.Delivery, r.QueueMode, r.Thread = wire.DeliveryQueue, "replace", "status" }
	w.send(a, "zulu", "v1", replace)
	w.send(a, "zulu", "v2", replace)
	last := w.send(a, "zulu", "v3", replace)
	if msgs, err := w.c.Peek(t.Context(), z.ID(), 0); err != nil || len(msgs) != 0 {
		t.Fatalf("within the coalescing window: %+v, %v; want nothing deliverable", msgs, err)
	}
	var msgs []wire.Message
	eventually(t, "the newest update deliverable", func() bool {
		var err error
		msgs, err = w.c.Peek(t.Context(), z.ID(), 0)
		return err == nil && len(msgs) > 0
	})
	if len(msgs) != 1 || msgs[0].ID != last.ID || msgs[0].Text != "v3" {
		t.Fatalf("after the window: %+v, want only v3", msgs)
	}
	if n := w.b.ledger.queuedCounts()[z.ID()]; n != 1 {
		t.Fatalf("stored %d updates, want 1 (the others replaced)", n)
	}
}

func TestSendReplaceQueueFull(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a := w.attach("alpha")
	z := w.attach("zulu", func(o *intercom.AttachOptions) { o.NoDeliver = true })
	for i := range maxReplacePerFrom {
		w.send(a, z.ID(), "x", func(r *wire.SendRequest) {
			r.Delivery, r.QueueMode, r.Thread = wire.DeliveryQueue, "replace", "t"+strings.Repeat("x", i)
		})
	}
	_, err := w.c.Send(t.Context(), wire.SendRequest{From: a.ID(), To: z.ID(), Text: "x", Delivery: wire.DeliveryQueue, QueueMode: "replace", Thread: "one too many"})
	wantCode(t, "replace message over the cap", err, wire.CodeFull)
}

func TestSendRefusals(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a := w.attach("alpha")
	w.attach("twin")
	w.attach("twin")
	ctx := t.Context()
	cases := []struct {
		what string
		req  wire.SendRequest
		code string
	}{
		{"unknown sender", wire.SendRequest{From: "nobody-at-all", To: "twin", Text: "x"}, wire.CodeNotFound},
		{"unknown target", wire.SendRequest{From: a.ID(), To: "ghost", Text: "x"}, wire.CodeNotFound},
		{"ambiguous target", wire.SendRequest{From: a.ID(), To: "twin", Text: "x"}, wire.CodeAmbiguous},
		{"self", wire.SendRequest{From: a.ID(), To: "alpha", Text: "x"}, wire.CodeSelf},
		{"short prefix", wire.SendRequest{From: a.ID(), To: a.ID()[:3], Text: "x"}, wire.CodeBadRequest},
		{"empty", wire.SendRequest{From: a.ID(), To: "alpha"}, wire.CodeBadRequest},
		{"too large", wire.SendRequest{From: a.ID(), To: "alpha", Text: strings.Repeat("x", wire.MaxMessageBytes+1)}, wire.CodeTooLarge},
		{"unknown host", wire.SendRequest{From: a.ID(), To: "x@nowhere", Text: "x"}, wire.CodeNotFound},
	}
	for _, c := range cases {
		_, err := w.c.Send(ctx, c.req)
		wantCode(t, c.what, err, c.code)
	}
	var amb *wire.Error
	_, err := w.c.Send(ctx, wire.SendRequest{From: a.ID(), To: "twin", Text: "x"})
	if !errors.As(err, &amb) || len(amb.Choices) != 2 {
		t.Fatalf("ambiguous target: %v, want two choices", err)
	}
	if _, err := call[wire.SendReply](t, w.c, wire.SubjSend, "not an object"); err == nil {
		t.Fatal("undecodable send accepted")
	}
	if _, err := call[wire.AckReply](t, w.c, wire.SubjAck, wire.AckRequest{SessionID: a.ID()}); err == nil {
		t.Fatal("ack without ids accepted")
	}
	if _, err := call[wire.AckReply](t, w.c, wire.SubjAck, 42); err == nil {
		t.Fatal("undecodable ack accepted")
	}
}

// A new holder of a session gets its backlog in order, then new messages.
func TestHolderGetsBacklogInOrder(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a := w.attach("alpha")
	z := w.attach("zulu", func(o *intercom.AttachOptions) { o.NoDeliver = true })
	id := z.ID()
	if err := z.Detach(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"1", "2", "3"} {
		w.send(a, id, text)
	}
	z2 := w.attach("", func(o *intercom.AttachOptions) { o.ResumeID = id })
	w.send(a, id, "4")
	for _, want := range []string{"1", "2", "3", "4"} {
		if m := recv(t, z2); m.Text != want {
			t.Fatalf("got %q, want %q", m.Text, want)
		}
	}
}

// TestTraceEventOfPromptAckNotWritten: a push acked within traceWriteAfter
// costs no event key (the ack's stored trace holds it); a push not acked is
// written as an event key once traceWriteAfter has passed.
func TestTraceEventOfPromptAckNotWritten(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a, z := w.attach("alpha"), w.attach("zulu")
	eventKeys := func(id string) int {
		n := 0
		_ = w.b.st.View(func(txn *store.Txn) error {
			pushed, fetched := txn.TraceEvents(id)
			n = len(pushed) + len(fetched)
			return nil
		})
		return n
	}
	pending := func() int {
		st, err := call[wire.Stats](t, w.c, wire.SubjStats, struct{}{})
		if err != nil {
			t.Fatal(err)
		}
		return st.TraceEventsPending
	}
	acked := w.send(a, "zulu", "acked at once")
	if m := recv(t, z); m.ID != acked.ID {
		t.Fatalf("pushed %s, want %s", m.ID, acked.ID)
	}
	if n, err := w.c.Ack(t.Context(), z.ID(), acked.ID); err != nil || n != 1 {
		t.Fatalf("ack: %d, %v", n, err)
	}
	shown := w.send(a, "zulu", "left unacked")
	if m := recv(t, z); m.ID != shown.ID {
		t.Fatalf("pushed %s, want %s", m.ID, shown.ID)
	}
	eventually(t, "trace events written", func() bool { return pending() == 0 })
	if n := eventKeys(acked.ID); n != 0 {
		t.Errorf("%d event keys for a message acked at once, want 0", n)
	}
	if n := eventKeys(shown.ID); n != 1 {
		t.Errorf("%d event keys for a message pushed and not acked, want 1", n)
	}
	tr, err := w.c.Trace(t.Context(), acked.ID)
	if err != nil || tr.State != "acked" || len(tr.Pushed) != 1 {
		t.Fatalf("trace of the acked message: %+v, %v; want acked with its push", tr, err)
	}
}
