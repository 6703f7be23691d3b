package broker

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Remote sends are announced to the bridge while they are persisted
// (announceEarly); these tests hold the two promises that keep that safe.

// pipelineRemote sends texts from a to bob@beta in one pipeline, in order,
// each an ask when ask says so, and waits for every answer.
func pipelineRemote(t *testing.T, w *world, a *intercom.Session, texts []string, ask func(i int) bool) {
	t.Helper()
	futures := make([]*intercom.SendFuture, 0, len(texts))
	for i, text := range texts {
		f, err := w.c.SendAsync(wire.SendRequest{From: a.ID(), To: "bob@beta", Text: text, ExpectsReply: ask(i)})
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
}

// A read of the outbox returns a message announced before it whose commit
// has not ended: the bridge drops, at the start of a read, what was
// announced before it. The commit is held open by an op of the test in the
// same batch, applied after the send's (so after its announcement).
func TestOutboxReadReturnsWhatWasAnnounced(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a := w.attach("alpha")
	w.reportBeta(false) // queued at once: nobody waits for a remote answer
	out := w.outbound()
	for attempt := range 20 {
		if w.readDuringHeldCommit(t, a, out, attempt) {
			return
		}
	}
	t.Fatal("the send's commit was never held open: no attempt could check the read")
}

// readDuringHeldCommit is one attempt of TestOutboxReadReturnsWhatWasAnnounced;
// false when the test's op did not land in the send's batch.
func (w *world) readDuringHeldCommit(t *testing.T, a *intercom.Session, out *nats.Subscription, attempt int) bool {
	gate, started := make(chan struct{}), make(chan struct{})
	w.b.cmt.Submit(store.Op{Apply: func(*store.Txn) error {
		close(started)
		<-gate
		return nil
	}, After: func(error) {}})
	<-started
	f, err := w.c.SendAsync(wire.SendRequest{From: a.ID(), To: "bob@beta", Text: fmt.Sprintf("early %d", attempt)})
	if err != nil {
		t.Fatal(err)
	}
	dkey := store.ClientID{Scope: a.ID(), ID: f.ClientMsgID()}
	for !w.b.sends.committing(dkey) { // prepared: its op is being queued
		select {
		case <-f.Done():
			t.Fatal("the send was answered while the committer was held")
		default:
			runtime.Gosched()
		}
	}
	hold, held := make(chan struct{}), make(chan struct{})
	release := sync.OnceFunc(func() { close(hold) })
	defer release()
	w.b.cmt.Submit(store.Op{Apply: func(*store.Txn) error {
		if w.b.announcing() { // the send was applied (and announced) before it
			close(held)
			<-hold
		}
		return nil
	}, After: func(error) {}})
	close(gate)
	m := nextOut(t, out)
	select {
	case <-held:
	case <-f.Done():
		return false // the test's op came first, or in the next batch
	}
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
	if !slices.ContainsFunc(page.Messages, func(s wire.Message) bool { return s.ID == m.ID }) {
		t.Fatalf("%q announced, then not in a read of %d messages made before its commit ended", m.Text, len(page.Messages))
	}
	if _, err := f.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	return true
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
	pipelineRemote(t, w, a, texts, func(i int) bool { return i%7 == 3 })
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
