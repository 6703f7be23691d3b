package broker

import (
	"fmt"
	"testing"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// TestSendAsyncPipelined: one sender publishes 300 sends with up to 64
// answers outstanding (pkg/intercom SendAsync); every future is answered
// with the id the holder is handed, each message arrives once and in the
// order it was sent.
func TestSendAsyncPipelined(t *testing.T) {
	w := newWorld(t)
	sink := w.attach("sink")
	from := w.attach("src")
	const n, depth = 300, 64
	var window []*intercom.SendFuture
	ids := make([]string, 0, n)
	settle := func() {
		rep, err := window[0].Wait(t.Context())
		if err != nil {
			t.Fatalf("send %d: %v", len(ids), err)
		}
		if rep.Duplicate || rep.To.Name != "sink" {
			t.Fatalf("send %d answered %+v", len(ids), rep)
		}
		ids = append(ids, rep.ID)
		window = window[1:]
	}
	for i := range n {
		if len(window) == depth {
			settle()
		}
		f, err := w.c.SendAsync(wire.SendRequest{From: from.ID(), To: "sink", Text: fmt.Sprintf("m%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		window = append(window, f)
	}
	for len(window) > 0 {
		settle()
	}
	seen := map[string]bool{}
	for i := range n {
		m := recv(t, sink)
		if m.Text != fmt.Sprintf("m%d", i) || m.ID != ids[i] || seen[m.ID] {
			t.Fatalf("delivery %d: %q (%s), want m%d (%s), once", i, m.Text, m.ID, i, ids[i])
		}
		seen[m.ID] = true
		if err := sink.Ack(t.Context(), m.ID); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSendAsyncRefused: a refusal comes back through the future as the
// broker's error, and the other sends in flight are unaffected.
func TestSendAsyncRefused(t *testing.T) {
	w := newWorld(t)
	w.attach("sink")
	from := w.attach("src")
	bad, err := w.c.SendAsync(wire.SendRequest{From: from.ID(), To: "nobody", Text: "x"})
	if err != nil {
		t.Fatal(err)
	}
	good, err := w.c.SendAsync(wire.SendRequest{From: from.ID(), To: "sink", Text: "y"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.Wait(t.Context())
	wantCode(t, "send to nobody", err, wire.CodeNotFound)
	if rep, err := good.Wait(t.Context()); err != nil || rep.ID == "" {
		t.Fatalf("send to sink: %+v, %v", rep, err)
	}
}

// TestSendAsyncAcrossRestart: sends published while the broker is down are
// answered by the next one (the client's reconnect buffer carries them) and
// each is stored once, with the id its future reports.
func TestSendAsyncAcrossRestart(t *testing.T) {
	h := newHome(t)
	b := h.start()
	c := h.client()
	sink, err := c.Attach(t.Context(), intercom.AttachOptions{Name: "sink", Cwd: "/proj"})
	if err != nil {
		t.Fatal(err)
	}
	from, err := c.Attach(t.Context(), intercom.AttachOptions{Name: "src", Cwd: "/proj", NoDeliver: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	var fs []*intercom.SendFuture
	for i := range 5 {
		f, err := c.SendAsync(wire.SendRequest{From: from.ID(), To: "sink", Text: fmt.Sprintf("m%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, f)
	}
	h.start()
	got := map[string]bool{}
	for i, f := range fs {
		rep, err := f.Wait(t.Context())
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		got[rep.ID] = true
	}
	for range fs {
		m := recv(t, sink)
		if !got[m.ID] {
			t.Fatalf("delivered %s (%q), not an id a future reported", m.ID, m.Text)
		}
		delete(got, m.ID)
		if err := sink.Ack(t.Context(), m.ID); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 0 {
		t.Fatalf("never delivered: %v", got)
	}
	if left, err := c.Inbox(t.Context(), sink.ID(), 10); err != nil || len(left) != 0 {
		t.Fatalf("inbox after acks: %v, %v", left, err)
	}
}
