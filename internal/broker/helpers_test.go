package broker

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/internal/paths"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// In-process broker tests: each starts a real broker (embedded NATS, the
// Unix-socket gateway, Badger) on its own t.TempDir home and talks to it
// with pkg/intercom, as every intercom program does.

// bounded is how long a test waits for an event before failing (a
// fail-safe, never an assertion about speed).
const bounded = 20 * time.Second

// testHome is a home a broker runs on.
type testHome struct {
	t      *testing.T
	home   string
	layout paths.Layout
}

func newHome(t *testing.T) *testHome {
	t.Helper()
	home := filepath.Join(t.TempDir(), "home")
	// The socket goes in the short private directory paths chooses for the
	// home (a path under t.TempDir() can pass the 108 bytes of sun_path).
	l, err := paths.Resolve(home, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(l.SocketDir()) })
	return &testHome{t: t, home: home, layout: l}
}

// start starts a broker on the home; it is closed when the test ends.
func (h *testHome) start(opts ...func(*Options)) *Broker {
	h.t.Helper()
	o := Options{Layout: h.layout, Logger: slog.New(slog.DiscardHandler)}
	for _, f := range opts {
		f(&o)
	}
	b, err := Start(o)
	if err != nil {
		h.t.Fatalf("start broker: %v", err)
	}
	h.t.Cleanup(func() { _ = b.Close() })
	return b
}

// client connects to the home's broker (never starting one).
func (h *testHome) client() *intercom.Client {
	h.t.Helper()
	c, err := intercom.Connect(h.t.Context(), intercom.Options{Home: h.home, NoSpawn: true, Timeout: bounded})
	if err != nil {
		h.t.Fatalf("connect: %v", err)
	}
	h.t.Cleanup(c.Close)
	return c
}

// world is a broker with one client.
type world struct {
	*testHome
	b *Broker
	c *intercom.Client
}

func newWorld(t *testing.T, opts ...func(*Options)) *world {
	t.Helper()
	h := newHome(t)
	b := h.start(opts...)
	return &world{testHome: h, b: b, c: h.client()}
}

// attach holds a session named name in the world's project.
func (w *world) attach(name string, opts ...func(*intercom.AttachOptions)) *intercom.Session {
	w.t.Helper()
	o := intercom.AttachOptions{Name: name, Cwd: "/proj"}
	for _, f := range opts {
		f(&o)
	}
	s, err := w.c.Attach(w.t.Context(), o)
	if err != nil {
		w.t.Fatalf("attach %s: %v", name, err)
	}
	return s
}

// send sends text from one session to a target and fails on error.
func (w *world) send(from *intercom.Session, to, text string, mods ...func(*wire.SendRequest)) wire.SendReply {
	w.t.Helper()
	req := wire.SendRequest{From: from.ID(), To: to, Text: text}
	for _, f := range mods {
		f(&req)
	}
	res, err := w.c.Send(w.t.Context(), req)
	if err != nil {
		w.t.Fatalf("send %q to %s: %v", text, to, err)
	}
	return res
}

// recv waits for the next message pushed to s.
func recv(t *testing.T, s *intercom.Session) wire.Message {
	t.Helper()
	select {
	case m := <-s.Messages():
		return m
	case <-time.After(bounded):
		t.Fatalf("no message for %s", s.Info().Name)
		return wire.Message{}
	}
}

// eventually polls cond until it holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bounded)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// wantCode fails unless err is a broker error with code.
func wantCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != code {
		t.Fatalf("%s: got %v, want a %s error", what, err, code)
	}
}

// call sends a request the client does not wrap.
func call[Res any](t *testing.T, c *intercom.Client, subject string, req any) (*Res, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), bounded)
	defer cancel()
	return intercom.Call[Res](ctx, c, subject, req)
}

func ptr[T any](v T) *T { return &v }
