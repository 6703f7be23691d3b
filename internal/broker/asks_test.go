package broker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Asks: a reply reaches the waiting asker, not the holder; an ask ends at
// its timeout, when a side goes away (the target after its resume grace),
// or when the asker cancels.

// askAsync asks in the background; the result arrives on the channel.
func askAsync(w *world, from *intercom.Session, to, text string, timeout time.Duration) <-chan askOutcome {
	out := make(chan askOutcome, 1)
	go func() {
		res, err := w.c.Ask(w.t.Context(), wire.SendRequest{From: from.ID(), To: to, Text: text}, timeout)
		out <- askOutcome{res, err}
	}()
	return out
}

type askOutcome struct {
	res intercom.AskResult
	err error
}

func (w *world) pendingOf(s *intercom.Session, n int) []wire.PendingAsk {
	w.t.Helper()
	var p []wire.PendingAsk
	eventually(w.t, "pending asks", func() bool {
		var err error
		p, err = w.c.Pending(w.t.Context(), s.ID())
		return err == nil && len(p) == n
	})
	return p
}

func TestAskAnsweredGoesToTheAsker(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a, z := w.attach("alpha"), w.attach("zulu")
	out := askAsync(w, a, "zulu", "ready?", bounded)
	q := recv(t, z)
	if !q.ExpectsReply {
		t.Fatalf("the ask arrived as %+v", q)
	}
	p := w.pendingOf(z, 1)
	if p[0].AskID != q.ID || p[0].From.ID != a.ID() || p[0].FromTarget != "alpha" {
		t.Fatalf("pending %+v", p[0])
	}
	w.send(z, a.ID(), "yes", func(r *wire.SendRequest) { r.ReplyTo = q.ID })
	o := <-out
	if o.err != nil || o.res.Reply == nil || o.res.Reply.Text != "yes" {
		t.Fatalf("ask result %+v, %v", o.res, o.err)
	}
	w.pendingOf(z, 0)
	select {
	case m := <-a.Messages():
		t.Fatalf("the reply also reached the asker's holder: %+v", m)
	case <-time.After(50 * time.Millisecond):
	}
}

func TestAskTimesOut(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a, z := w.attach("alpha"), w.attach("zulu")
	o := <-askAsync(w, a, "zulu", "anyone?", 100*time.Millisecond)
	if !errors.Is(o.err, intercom.ErrAskTimeout) {
		t.Fatalf("an unanswered ask ended with %+v", o.res)
	}
	recv(t, z)
	w.pendingOf(z, 0)
}

// A session that left ends the asks to it once the resume grace has passed
// (asks_resume_test.go); with askResumeGraceMs 0 that is at once.
func TestAskPeerLeaves(t *testing.T) {
	t.Parallel()
	w := graceWorld(t, "0")
	a, z := w.attach("alpha"), w.attach("zulu")
	out, _ := askThenLeave(w, a, z, bounded)
	askEnds(w, out, "a session that left, no grace", intercom.ErrPeerDisconnected)
}

func TestAskRefusals(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a, z := w.attach("alpha"), w.attach("zulu")
	off := w.attach("offline", func(o *intercom.AttachOptions) { o.NoDeliver = true })
	if err := off.Detach(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, err := w.c.Ask(t.Context(), wire.SendRequest{From: a.ID(), To: off.ID(), Text: "?"}, time.Second)
	wantCode(t, "ask to an offline session", err, wire.CodePeerOffline)
	askAsync(w, a, "zulu", "first", bounded) // ends with the test (its asker leaves)
	w.pendingOf(z, 1)
	_, err = w.c.Ask(t.Context(), wire.SendRequest{From: a.ID(), To: "zulu", Text: "second"}, time.Second)
	wantCode(t, "a second waiting ask", err, wire.CodeAskBusy)
	if err := a.Detach(t.Context()); err != nil {
		t.Fatal(err)
	}
	w.pendingOf(z, 0) // the asker left: its ask is withdrawn
}

// An ask to a busy session is delivered as a plain message (peer_busy):
// nobody waits for its reply.
func TestAskPeerBusy(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a := w.attach("alpha")
	z := w.attach("zulu", func(o *intercom.AttachOptions) { o.Status = "thinking" })
	o := <-askAsync(w, a, "zulu", "now?", bounded)
	if !errors.Is(o.err, intercom.ErrPeerBusy) {
		t.Fatalf("ask to a busy session: %+v, %v; want peer_busy", o.res, o.err)
	}
	if m := recv(t, z); m.ExpectsReply {
		t.Fatalf("a peer_busy ask arrived expecting a reply: %+v", m)
	}
	w.pendingOf(z, 0)
}

// askwait hands over a reply stored before the asker waited again (as
// after a broker restart), and cancel withdraws an ask.
func TestAskWaitAndCancel(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a, z := w.attach("alpha"), w.attach("zulu")
	out := askAsync(w, a, "zulu", "q", 50*time.Millisecond)
	q := recv(t, z)
	<-out // timed out: the reply comes too late for that wait
	w.send(z, a.ID(), "late answer", func(r *wire.SendRequest) { r.ReplyTo = q.ID })
	if m := recv(t, a); m.Text != "late answer" {
		t.Fatalf("late reply pushed as %+v", m)
	}
	events, err := w.c.Conn().SubscribeSync("_INBOX.askwait-test")
	if err != nil {
		t.Fatal(err)
	}
	defer events.Unsubscribe()
	if err := w.c.AskWait(t.Context(), wire.AskWaitRequest{SessionID: a.ID(), AskID: q.ID, To: z.ID(), Text: "q", WaitSubject: "_INBOX.askwait-test"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), bounded)
	defer cancel()
	ev, err := events.NextMsgWithContext(ctx)
	if err != nil || !strings.Contains(string(ev.Data), "late answer") {
		t.Fatalf("askwait event %s, %v; want the stored reply", ev.Data, err)
	}
	err = w.c.AskWait(t.Context(), wire.AskWaitRequest{SessionID: z.ID(), AskID: "m-other", To: "nobody", WaitSubject: "x"})
	wantCode(t, "askwait for an unknown session", err, wire.CodeNotFound)
	if err := w.c.AskWait(t.Context(), wire.AskWaitRequest{SessionID: a.ID()}); !errors.Is(err, intercom.ErrBadRequest) {
		t.Fatalf("askwait without fields: %v", err)
	}
	// A fresh ask, cancelled by its asker.
	if err := w.c.AskWait(t.Context(), wire.AskWaitRequest{SessionID: a.ID(), AskID: "m-new", To: z.ID(), Text: "again", WaitSubject: "x"}); err != nil {
		t.Fatal(err)
	}
	err = w.c.AskWait(t.Context(), wire.AskWaitRequest{SessionID: z.ID(), AskID: "m-new", To: a.ID(), Text: "mine", WaitSubject: "y"})
	wantCode(t, "askwait on another session's ask", err, wire.CodeBadRequest)
	w.pendingOf(z, 1)
	if err := w.c.CancelAsk(t.Context(), a.ID(), "m-new"); err != nil {
		t.Fatal(err)
	}
	w.pendingOf(z, 0)
	if _, err := w.c.Pending(t.Context(), "nobody-at-all"); !errors.Is(err, intercom.ErrNotFound) {
		t.Fatalf("pending of an unknown session: %v", err)
	}
}

// TestAskPendingWhenShown: an ask is pushed only once it is registered, so
// the recipient that sees it can list it and reply at once (an ask pushed
// early, before its commit, was not pending yet).
func TestAskPendingWhenShown(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a, z := w.attach("alpha"), w.attach("zulu")
	for i := range 20 {
		out := askAsync(w, a, "zulu", "ready?", bounded)
		q := recv(t, z)
		p, err := w.c.Pending(t.Context(), z.ID())
		if err != nil || len(p) != 1 || p[0].AskID != q.ID {
			t.Fatalf("ask %d shown, pending then: %+v, %v", i, p, err)
		}
		w.send(z, a.ID(), "yes", func(r *wire.SendRequest) { r.ReplyTo = q.ID })
		if o := <-out; o.err != nil || o.res.Reply == nil {
			t.Fatalf("ask %d: %+v, %v", i, o.res, o.err)
		}
		if err := z.Ack(t.Context(), q.ID); err != nil {
			t.Fatal(err)
		}
	}
}
