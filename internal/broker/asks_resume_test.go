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

// askEnds fails unless the ask ends with want and leaves no ask behind.
func askEnds(w *world, out <-chan askOutcome, what string, want error) {
	w.t.Helper()
	if o := outcome(w.t, out, what); !errors.Is(o.err, want) {
		w.t.Fatalf("%s: the ask ended with %+v, %v; want %v", what, o.res, o.err, want)
	}
	if n := w.b.asks.count(); n != 0 {
		w.t.Fatalf("%s: %d asks left", what, n)
	}
}

// askThenLeave asks z from a and detaches z once the ask is pending.
func askThenLeave(w *world, a, z *intercom.Session, timeout time.Duration) (<-chan askOutcome, wire.Message) {
	w.t.Helper()
	out := askAsync(w, a, z.ID(), "still there?", timeout)
	q := recv(w.t, z)
	w.pendingOf(z, 1)
	if err := z.Detach(w.t.Context()); err != nil {
		w.t.Fatal(err)
	}
	return out, q
}

// resumeAndReply resumes session id, which must have ask q pending, and
// answers it: the reply must reach the asker, still waiting on out.
func resumeAndReply(w *world, a *intercom.Session, id string, q wire.Message, out <-chan askOutcome) {
	w.t.Helper()
	again := w.attach("zulu", func(o *intercom.AttachOptions) { o.ResumeID = id })
	if p := w.pendingOf(again, 1); p[0].AskID != q.ID {
		w.t.Fatalf("pending of the resumed session %+v, want ask %s", p, q.ID)
	}
	w.send(again, a.ID(), "yes, back", func(r *wire.SendRequest) { r.ReplyTo = q.ID })
	if o := outcome(w.t, out, "reply after resume"); o.err != nil || o.res.Reply == nil || o.res.Reply.Text != "yes, back" {
		w.t.Fatalf("ask answered after the target resumed: %+v, %v", o.res, o.err)
	}
	w.pendingOf(again, 0)
}

// The target's holder closes cleanly (as Pi does when it restarts) and
// the session is resumed: the ask is pending for the resumed session and
// its reply reaches the asker that kept waiting.
func TestAskSurvivesTargetResume(t *testing.T) {
	t.Parallel()
	w := newWorld(t) // the default grace, a minute
	a, z := w.attach("alpha"), w.attach("zulu")
	out, q := askThenLeave(w, a, z, bounded)
	if p := w.pendingOf(z, 1); p[0].AskID != q.ID {
		t.Fatalf("pending of the detached session %+v, want ask %s", p, q.ID)
	}
	resumeAndReply(w, a, z.ID(), q, out)
}

// A holder that crashes (its connection ends without a detach) gives the
// same grace.
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
	resumeAndReply(w, a, z.ID(), q, out)
}

// A target still away when the grace passes ends the ask with
// peer_disconnected, as a resume after that finds nothing pending.
func TestAskResumeGraceExpires(t *testing.T) {
	t.Parallel()
	w := graceWorld(t, "200")
	a, z := w.attach("alpha"), w.attach("zulu")
	out, _ := askThenLeave(w, a, z, bounded)
	askEnds(w, out, "a session that stayed away past the grace", intercom.ErrPeerDisconnected)
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
	askEnds(w, out, "an ask timing out while its target is away", intercom.ErrAskTimeout)
}

// A session that ends for good ends the asks to it at once, not after the
// grace (a minute here, beyond the test's bounded wait): an ephemeral one
// when it detaches, a durable one when it is forgotten.
func TestAskTargetEndedEndsAsksAtOnce(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a := w.attach("alpha")
	eph := w.attach("oneshot", func(o *intercom.AttachOptions) { o.Ephemeral = true })
	out, _ := askThenLeave(w, a, eph, time.Hour)
	askEnds(w, out, "an ephemeral target that left", intercom.ErrPeerDisconnected)

	z := w.attach("zulu")
	out, _ = askThenLeave(w, a, z, time.Hour)
	w.pendingOf(z, 1) // in its grace
	if err := w.c.Forget(t.Context(), z.ID()); err != nil {
		t.Fatal(err)
	}
	askEnds(w, out, "a forgotten target", intercom.ErrPeerDisconnected)
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
	askEnds(w, out, "an asker that detached", intercom.ErrAskerDisconnected)
	w.pendingOf(z, 0)
}
