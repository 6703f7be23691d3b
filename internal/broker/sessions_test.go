package broker

import (
	"errors"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Sessions and presence: registering, resuming, listing, state, and what a
// restart keeps.

func TestRegisterResumeAndHeld(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := t.Context()
	a := w.attach("alpha")
	if a.Resumed() || a.Info().Target != "alpha" || a.Info().State != wire.StateIdle || !a.Info().AcceptsAsks {
		t.Fatalf("new session %+v", a.Info())
	}
	other := w.client()
	_, err := other.Attach(ctx, intercom.AttachOptions{ResumeID: a.ID(), Cwd: "/proj"})
	if !errors.Is(err, intercom.ErrHeld) {
		t.Fatalf("resume of a held session: %v, want ErrHeld", err)
	}
	// Without resume, a held id gives the newcomer a session of its own.
	b2, err := other.Attach(ctx, intercom.AttachOptions{RequestID: a.ID(), Name: "beta", Cwd: "/proj"})
	if err != nil || b2.ID() == a.ID() {
		t.Fatalf("attach asking for a held id: %v, id %s", err, b2.ID())
	}
	_, err = other.Attach(ctx, intercom.AttachOptions{ResumeID: "no-such-session", Cwd: "/proj"})
	if !errors.Is(err, intercom.ErrNotFound) {
		t.Fatalf("resume of an unknown id: %v", err)
	}
	if err := a.Detach(ctx); err != nil {
		t.Fatal(err)
	}
	back, err := other.Attach(ctx, intercom.AttachOptions{ResumeID: a.ID(), Cwd: "/proj"})
	if err != nil || !back.Resumed() || back.Info().Name != "alpha" {
		t.Fatalf("resume of a free session: %+v, %v", back.Info(), err)
	}
	_, err = call[wire.RegisterReply](t, w.c, wire.SubjRegister, wire.RegisterRequest{Cwd: "/proj", Holder: true, HolderToken: "bad token"})
	wantCode(t, "register with a bad token", err, wire.CodeBadRequest)
	_, err = call[wire.RegisterReply](t, w.c, wire.SubjRegister, wire.RegisterRequest{Cwd: "/proj", ClientID: 1 << 40})
	wantCode(t, "register for a connection that is not open", err, wire.CodeBadRequest)
}

func TestListScopesAndState(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := t.Context()
	a := w.attach("alpha")
	w.attach("zulu", func(o *intercom.AttachOptions) { o.Cwd = "/elsewhere" })
	gone := w.attach("gone")
	if err := gone.Detach(ctx); err != nil {
		t.Fatal(err)
	}
	names := func(o intercom.ListOptions) []string {
		t.Helper()
		rows, err := w.c.List(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rows {
			out = append(out, r.Name)
		}
		return out
	}
	if got := names(intercom.ListOptions{Self: a.ID(), Cwd: "/proj"}); len(got) != 1 || got[0] != "alpha" {
		t.Fatalf("project scope: %v, want alpha only", got)
	}
	if got := names(intercom.ListOptions{Self: a.ID(), Cwd: "/proj", Scope: "all"}); len(got) != 2 {
		t.Fatalf("all scope: %v, want alpha and zulu", got)
	}
	if got := names(intercom.ListOptions{Self: a.ID(), Cwd: "/proj", Scope: "all", IncludeDisconnected: true}); len(got) != 3 || got[2] != "gone" {
		t.Fatalf("all with disconnected: %v, want alpha, zulu, then gone", got)
	}
	_, err := w.c.List(ctx, intercom.ListOptions{Scope: "galaxy"})
	wantCode(t, "list with a bad scope", err, wire.CodeBadRequest)
	row, err := w.c.SetState(ctx, a.ID(), "tool:bash", nil)
	if err != nil || row.State != wire.StateBusy || row.AcceptsAsks {
		t.Fatalf("state tool:bash: %+v, %v", row, err)
	}
	row, err = w.c.SetState(ctx, a.ID(), "", ptr(true))
	if err != nil || row.State != wire.StateIdle || !row.AcceptsAsks || row.Status != "tool:bash" {
		t.Fatalf("accepts_asks without a status: %+v, %v", row, err)
	}
	_, err = w.c.SetState(ctx, gone.ID(), "idle", nil)
	wantCode(t, "state of a disconnected session", err, wire.CodePeerOffline)
	_, err = w.c.SetState(ctx, "nobody-at-all", "idle", nil)
	wantCode(t, "state of an unknown session", err, wire.CodeNotFound)
	wantCode(t, "unregister an unknown session", w.c.Unregister(ctx, "nobody-at-all"), wire.CodeNotFound)
	if err := w.c.Unregister(ctx, gone.ID()); err != nil {
		t.Fatalf("unregister a disconnected session: %v", err)
	}
}

// A client whose connection closes leaves its sessions disconnected, and
// an ephemeral one forgotten with its inbox.
func TestConnectionCloseDetaches(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := t.Context()
	a := w.attach("alpha")
	other := w.client()
	held, err := other.Attach(ctx, intercom.AttachOptions{Name: "held", Cwd: "/proj"})
	if err != nil {
		t.Fatal(err)
	}
	eph, err := other.Attach(ctx, intercom.AttachOptions{Cwd: "/proj", Ephemeral: true, NoDeliver: true})
	if err != nil {
		t.Fatal(err)
	}
	w.send(a, eph.ID(), "for the one-shot")
	other.Close()
	eventually(t, "the held session disconnected", func() bool {
		s, ok := w.b.sessions.get(held.ID())
		return ok && !s.Connected
	})
	eventually(t, "the ephemeral session and its mail forgotten", func() bool {
		return !w.b.sessions.known(eph.ID()) && w.b.ledger.queuedCounts()[eph.ID()] == 0
	})
}

// A restarted broker knows its sessions and delivers what was accepted.
func TestRestartKeepsSessionsAndMail(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	b := h.start()
	c := h.client()
	w := &world{testHome: h, b: b, c: c}
	a := w.attach("alpha")
	z := w.attach("zulu", func(o *intercom.AttachOptions) { o.NoDeliver = true })
	sent := w.send(a, z.ID(), "survives")
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	b = h.start()
	c = h.client()
	rows, err := c.List(t.Context(), intercom.ListOptions{Scope: "all", IncludeDisconnected: true})
	if err != nil || len(rows) != 2 {
		t.Fatalf("sessions after a restart: %+v, %v", rows, err)
	}
	for _, r := range rows {
		if r.Connected {
			t.Fatalf("%s connected after a restart, before anyone attached", r.Name)
		}
		if r.Name == "zulu" && r.Queued != 1 {
			t.Fatalf("zulu queued %d after a restart, want 1", r.Queued)
		}
	}
	z2, err := c.Attach(t.Context(), intercom.AttachOptions{ResumeID: z.ID(), Cwd: "/proj"})
	if err != nil {
		t.Fatal(err)
	}
	first := recv(t, z2)
	if first.ID != sent.ID {
		t.Fatalf("after a restart got %+v, want %s", first, sent.ID)
	}
	// Sequence numbers go on increasing.
	w2 := &world{testHome: h, b: b, c: c}
	a2, err := c.Attach(t.Context(), intercom.AttachOptions{ResumeID: a.ID(), Cwd: "/proj"})
	if err != nil {
		t.Fatal(err)
	}
	w2.send(a2, z.ID(), "next")
	if m := recv(t, z2); m.Seq <= first.Seq {
		t.Fatalf("sequence after a restart: %d, not above %d", m.Seq, first.Seq)
	}
}

// The sweep forgets sessions that never held a message, and keeps one that
// did.
func TestSweepForgetsIdleSessions(t *testing.T) {
	t.Parallel()
	w := newWorld(t, func(o *Options) { o.ForgetAfter = 20 * time.Millisecond })
	ctx := t.Context()
	a := w.attach("alpha")
	idle := w.attach("idle")
	mailed := w.attach("mailed")
	subbed := w.attach("subbed")
	w.send(a, "mailed", "keep me")
	if _, err := w.c.Subscribe(ctx, subbed.ID(), "t", false); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*intercom.Session{idle, mailed, subbed} {
		if err := s.Detach(ctx); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the idle session forgotten", func() bool { return !w.b.sessions.known(idle.ID()) })
	eventually(t, "the subscribed session marked as keeping state", func() bool {
		s, _ := w.b.sessions.get(subbed.ID())
		return s.mailed
	})
	if !w.b.sessions.known(mailed.ID()) || !w.b.sessions.known(a.ID()) {
		t.Fatal("the sweep forgot a session that held mail, or a connected one")
	}
}
