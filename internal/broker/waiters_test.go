package broker

import (
	"errors"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Waiting for mail, delivery timelines and the runtime figures.

func TestInboxWait(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := t.Context()
	a := w.attach("alpha")
	z := w.attach("zulu", func(o *intercom.AttachOptions) { o.NoDeliver = true })
	if ready, err := w.c.InboxWait(ctx, z.ID(), 30*time.Millisecond, false); err != nil || ready {
		t.Fatalf("wait on an empty inbox: %v, %v; want a timeout", ready, err)
	}
	got := make(chan bool, 1)
	go func() {
		ready, _ := w.c.InboxWait(ctx, z.ID(), bounded, true)
		got <- ready
	}()
	eventually(t, "the wait registered", func() bool { return w.b.waiters.count() == 1 })
	w.send(a, z.ID(), "fyi", func(r *wire.SendRequest) { r.Delivery = wire.DeliveryPassive })
	w.send(a, z.ID(), "wake up")
	if !<-got {
		t.Fatal("the wait ended without mail")
	}
	if ready, err := w.c.InboxWait(ctx, z.ID(), bounded, false); err != nil || !ready {
		t.Fatalf("wait with mail waiting: %v, %v", ready, err)
	}
	_, err := w.c.InboxWait(ctx, "nobody-at-all", time.Second, false)
	wantCode(t, "wait on an unknown session", err, wire.CodeNotFound)
	_, err = call[wire.InboxWaitReply](t, w.c, wire.SubjInboxWait, "junk")
	wantCode(t, "an undecodable wait", err, wire.CodeBadRequest)
}

// A wait on a session whose delivering holder takes the mail still ends,
// and says what arrived.
func TestInboxWaitSeesArrivalsForAHolder(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a, z := w.attach("alpha"), w.attach("zulu")
	got := make(chan wire.InboxWaitReply, 1)
	go func() {
		res, _ := w.c.WaitInbox(t.Context(), z.ID(), bounded, true)
		got <- res
	}()
	eventually(t, "the wait registered", func() bool { return w.b.waiters.count() == 1 })
	sent := w.send(a, "zulu", "for the holder")
	m := recv(t, z)
	if err := z.Ack(t.Context(), m.ID); err != nil {
		t.Fatal(err)
	}
	res := <-got
	if !res.Ready || len(res.Arrived) != 1 || res.Arrived[0].ID != sent.ID {
		t.Fatalf("wait result %+v, want ready with the arrival", res)
	}
}

func TestTraceTimeline(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	b := h.start()
	c := h.client()
	w := &world{testHome: h, b: b, c: c}
	a, z := w.attach("alpha"), w.attach("zulu")
	sent := w.send(a, "zulu", "traced")
	m := recv(t, z)
	tr, err := c.Trace(t.Context(), sent.ID)
	if err != nil || tr.State != "pushed" || len(tr.Pushed) != 1 || tr.From.ID != a.ID() || tr.To != z.ID() {
		t.Fatalf("trace of a pushed message: %+v, %v", tr, err)
	}
	if err := z.Ack(t.Context(), m.ID); err != nil {
		t.Fatal(err)
	}
	tr, err = c.Trace(t.Context(), sent.ID)
	if err != nil || tr.State != "acked" || tr.Acked == nil || len(tr.Pushed) != 1 {
		t.Fatalf("trace of an acked message: %+v, %v", tr, err)
	}
	_, err = c.Trace(t.Context(), "m-unknown")
	wantCode(t, "trace of an unknown id", err, wire.CodeNotFound)
	// A message pushed but not acked keeps its timeline across a restart:
	// the trace writer stored the push.
	kept := w.send(a, "zulu", "pushed before the restart")
	recv(t, z)
	eventually(t, "the push event stored", func() bool {
		_, pending := b.traces.counts()
		return pending == 0
	})
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	h.start()
	tr, err = h.client().Trace(t.Context(), kept.ID)
	if err != nil || tr.State != "pushed" || len(tr.Pushed) != 1 {
		t.Fatalf("trace after a restart: %+v, %v", tr, err)
	}
}

func TestStats(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a := w.attach("alpha")
	w.attach("zulu")
	w.send(a, "zulu", "x")
	st, err := call[wire.Stats](t, w.c, wire.SubjStats, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Sessions != 2 || st.Connected != 2 || st.Clients != 1 || st.Goroutines == 0 || st.Traces != 1 {
		t.Fatalf("stats %+v", st)
	}
	if err := w.c.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := call[wire.Empty](t, w.c, wire.SubjPing, "junk"); !errors.Is(err, intercom.ErrBadRequest) {
		t.Fatalf("an undecodable request: %v", err)
	}
}
