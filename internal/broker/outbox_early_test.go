package broker

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Remote sends are announced to the bridge while they are persisted
// (announceEarly); these tests hold the two promises that keep that safe.

// A read of the outbox returns a message announced before it whose commit
// has not ended: the bridge drops, at the start of a read, what was
// announced before it. The test holds the commit open just after the
// announcement.
func TestOutboxReadReturnsWhatWasAnnounced(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a := w.attach("alpha")
	w.reportBeta(false) // queued at once: nobody waits for a remote answer
	out := w.outbound()
	hold, held := make(chan struct{}), make(chan struct{})
	release, holding := sync.OnceFunc(func() { close(hold) }), sync.OnceFunc(func() { close(held) })
	defer release()
	hook := func() {
		if w.b.announcing() {
			holding()
			<-hold
		}
	}
	w.b.kicks.testHookApplied.Store(&hook)
	f, err := w.c.SendAsync(wire.SendRequest{From: a.ID(), To: "bob@beta", Text: "early"})
	if err != nil {
		t.Fatal(err)
	}
	m := nextOut(t, out)
	<-held
	read := make(chan *wire.InboxReply, 1)
	go func() {
		page, err := call[wire.InboxReply](t, w.c, wire.SubjBridgeOutbox, wire.BridgeOutboxRequest{Host: "beta", Limit: 1000})
		if err != nil {
			t.Errorf("read the outbox: %v", err)
			page = &wire.InboxReply{}
		}
		read <- page
	}()
	var page *wire.InboxReply
	select {
	case page = <-read: // a read that did not wait for the commit
	case <-time.After(300 * time.Millisecond): // it waits: let the commit end
		release()
		page = <-read
	}
	if len(page.Messages) != 1 || page.Messages[0].ID != m.ID {
		t.Fatalf("%q announced, then a read made before its commit ended returned %+v", m.Text, page.Messages)
	}
	select {
	case <-f.Done():
	default:
		release()
	}
	if res, err := f.Wait(t.Context()); err != nil || !res.Queued {
		t.Fatalf("send: %+v, %v", res, err)
	}
}

// An ask is announced once committed, and the sends behind it to the same
// host wait for it: the announcements come in the order sent, whichever
// batches the commits fall into.
func TestAskHoldsBackLaterAnnouncementsInOrder(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a := w.attach("alpha")
	w.reportBeta(false)
	out := w.outbound()
	const n = 200
	texts := make([]string, n)
	for i := range texts {
		texts[i] = fmt.Sprintf("part %d", i)
	}
	futures := make([]*intercom.SendFuture, 0, n)
	for i, text := range texts { // one pipeline, every seventh an ask
		f, err := w.c.SendAsync(wire.SendRequest{From: a.ID(), To: "bob@beta", Text: text, ExpectsReply: i%7 == 3})
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		futures = append(futures, f)
	}
	for i, f := range futures {
		if res, err := f.Wait(t.Context()); err != nil || !res.Queued {
			t.Fatalf("send %d: %+v, %v; want queued", i, res, err)
		}
	}
	for i := range n {
		if m := nextOut(t, out); m.Text != texts[i] {
			t.Fatalf("announcement %d is %q, want %q", i, m.Text, texts[i])
		}
	}
	page, err := call[wire.InboxReply](t, w.c, wire.SubjBridgeOutbox, wire.BridgeOutboxRequest{Host: "beta", Limit: 1000})
	if err != nil || len(page.Messages) != n {
		t.Fatalf("outbox holds %d messages (%v), want %d", len(page.Messages), err, n)
	}
	if w.b.announcing() {
		t.Fatal("announcements still pending once every send was answered")
	}
}
