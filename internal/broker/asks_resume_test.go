package broker

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Asks across a restart of the asked session (asks_resume.go): a target
// that detaches without ending keeps the asks to it for the resume grace;
// one that ends for good, or stays away past the grace, ends them with
// peer_disconnected; the asker's own detach withdraws its ask and tells
// the waiting process.

// graceWorld is a world whose broker has config.json's askResumeGraceMs
// set to ms.
func graceWorld(t *testing.T, ms string) *world {
	t.Helper()
	h := newHome(t)
	if err := os.MkdirAll(h.home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.home, "config.json"), []byte(`{"askResumeGraceMs": `+ms+`}`), 0o600); err != nil {
		t.Fatal(err)
	}
	b := h.start()
	return &world{testHome: h, b: b, c: h.client()}
}

// outcome waits for an ask's result.
func outcome(t *testing.T, out <-chan askOutcome, what string) askOutcome {
	t.Helper()
	select {
	case o := <-out:
		return o
	case <-time.After(bounded):
		t.Fatalf("%s: the ask did not end", what)
		return askOutcome{}
	}
}

// The target's holder closes cleanly (as Pi does when it restarts) and
// the session is resumed: the ask is pending for the resumed session and
// its reply reaches the asker that kept waiting.
func TestAskSurvivesTargetResume(t *testing.T) {
	t.Parallel()
	w := newWorld(t) // the default grace, a minute
	a, z := w.attach("alpha"), w.attach("zulu")
	out := askAsync(w, a, "zulu", "still there?", bounded)
	q := recv(t, z)
	if err := z.Detach(t.Context()); err != nil {
		t.Fatal(err)
	}
	if p := w.pendingOf(z, 1); p[0].AskID != q.ID {
		t.Fatalf("pending of the detached session %+v, want ask %s", p, q.ID)
	}
	again := w.attach("zulu", func(o *intercom.AttachOptions) { o.ResumeID = z.ID() })
	if p := w.pendingOf(again, 1); p[0].AskID != q.ID {
		t.Fatalf("pending of the resumed session %+v, want ask %s", p, q.ID)
	}
	w.send(again, a.ID(), "yes, back", func(r *wire.SendRequest) { r.ReplyTo = q.ID })
	if o := outcome(t, out, "reply after resume"); o.err != nil || o.res.Reply == nil || o.res.Reply.Text != "yes, back" {
		t.Fatalf("ask answered after the target resumed: %+v, %v", o.res, o.err)
	}
	w.pendingOf(again, 0)
}

// A holder that crashes (its connection ends without a detach) gives the
// same grace, and a resume ends it: a later detach starts a new one.
func TestAskSurvivesTargetCrash(t *testing.T) {
	t.Parallel()
	w := graceWorld(t, "60000")
	a := w.attach("alpha")
	holder := w.client()
	z, err := holder.Attach(t.Context(), intercom.AttachOptions{Name: "zulu", Cwd: "/proj"})
	if err != nil {
		t.Fatal(err)
	}
	out := askAsync(w, a, "zulu", "crash?", bounded)
	q := recv(t, z)
	holder.Close() // the holder process died
	eventually(t, "the crashed holder's session to disconnect", func() bool {
		s, ok := w.b.sessions.get(z.ID())
		return ok && !s.Connected
	})
	again := w.attach("zulu", func(o *intercom.AttachOptions) { o.ResumeID = z.ID() })
	if p := w.pendingOf(again, 1); p[0].AskID != q.ID {
		t.Fatalf("pending after the crash and resume %+v, want %s", p, q.ID)
	}
	w.send(again, a.ID(), "recovered", func(r *wire.SendRequest) { r.ReplyTo = q.ID })
	if o := outcome(t, out, "reply after crash"); o.err != nil || o.res.Reply == nil || o.res.Reply.Text != "recovered" {
		t.Fatalf("ask answered after the crash: %+v, %v", o.res, o.err)
	}
}

// A target still away when the grace passes ends the ask with
// peer_disconnected, as a resume after that finds nothing pending.
func TestAskResumeGraceExpires(t *testing.T) {
	t.Parallel()
	w := graceWorld(t, "200")
	a, z := w.attach("alpha"), w.attach("zulu")
	out := askAsync(w, a, "zulu", "stay?", bounded)
	recv(t, z)
	w.pendingOf(z, 1)
	if err := z.Detach(t.Context()); err != nil {
		t.Fatal(err)
	}
	if o := outcome(t, out, "grace expiry"); !errors.Is(o.err, intercom.ErrPeerDisconnected) {
		t.Fatalf("ask to a session that stayed away: %+v, %v; want peer_disconnected", o.res, o.err)
	}
	if w.b.asks.count() != 0 {
		t.Fatalf("%d asks left", w.b.asks.count())
	}
	again := w.attach("zulu", func(o *intercom.AttachOptions) { o.ResumeID = z.ID() })
	w.pendingOf(again, 0)
}

// A grace longer than the ask's own life does not extend it: the ask
// times out.
func TestAskResumeGraceNeverOutlivesTimeout(t *testing.T) {
	t.Parallel()
	w := newWorld(t) // a minute of grace
	a, z := w.attach("alpha"), w.attach("zulu")
	out := askAsync(w, a, "zulu", "quick?", 300*time.Millisecond)
	recv(t, z)
	if err := z.Detach(t.Context()); err != nil {
		t.Fatal(err)
	}
	if o := outcome(t, out, "timeout in grace"); !errors.Is(o.err, intercom.ErrAskTimeout) {
		t.Fatalf("ask timing out while its target is away: %+v, %v; want timeout", o.res, o.err)
	}
	w.pendingOf(z, 0)
}

// A session that ends for good ends the asks to it at once, not after the
// grace (a minute here, beyond the test's bounded wait): an ephemeral one
// when it detaches, a durable one when it is forgotten.
func TestAskTargetEndedEndsAsksAtOnce(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a := w.attach("alpha")
	eph := w.attach("oneshot", func(o *intercom.AttachOptions) { o.Ephemeral = true })
	out := askAsync(w, a, eph.ID(), "one?", time.Hour)
	recv(t, eph)
	if err := eph.Detach(t.Context()); err != nil {
		t.Fatal(err)
	}
	if o := outcome(t, out, "ephemeral target"); !errors.Is(o.err, intercom.ErrPeerDisconnected) {
		t.Fatalf("ask to an ephemeral session that left: %+v, %v; want peer_disconnected", o.res, o.err)
	}

	z := w.attach("zulu")
	out = askAsync(w, a, "zulu", "two?", time.Hour)
	recv(t, z)
	if err := z.Detach(t.Context()); err != nil {
		t.Fatal(err)
	}
	w.pendingOf(z, 1) // in its grace
	if err := w.c.Forget(t.Context(), z.ID()); err != nil {
		t.Fatal(err)
	}
	if o := outcome(t, out, "forgotten target"); !errors.Is(o.err, intercom.ErrPeerDisconnected) {
		t.Fatalf("ask to a forgotten session: %+v, %v; want peer_disconnected", o.res, o.err)
	}
	if w.b.asks.count() != 0 {
		t.Fatalf("%d asks left", w.b.asks.count())
	}
}

// An asker whose session detaches while another process waits for the
// reply (`intercom --session S ask` with S's holder gone) has its ask
// withdrawn, and the waiting process is told so at once, not at its
// timeout (an hour here).
func TestAskAskerDetachTellsWaiter(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a, z := w.attach("alpha"), w.attach("zulu")
	out := askAsync(w, a, "zulu", "waiting?", time.Hour)
	recv(t, z)
	w.pendingOf(z, 1)
	if err := a.Detach(t.Context()); err != nil {
		t.Fatal(err)
	}
	if o := outcome(t, out, "asker detached"); !errors.Is(o.err, intercom.ErrAskerDisconnected) {
		t.Fatalf("ask whose asker detached: %+v, %v; want asker_disconnected", o.res, o.err)
	}
	w.pendingOf(z, 0)
}
