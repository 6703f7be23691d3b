package hookclient

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/internal/brokertest"
	"github.com/intercom-dev/intercom/internal/paths"
	"github.com/intercom-dev/intercom/internal/spawn"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

func connect(t *testing.T, home string) *Client {
	t.Helper()
	c, err := Connect(context.Background(), Options{Home: home, NoSpawn: true, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// held registers a session held by a pkg/intercom client (as `intercom
// hold` holds a hook's session) and returns its id and a sender.
func held(t *testing.T, home, name string) (string, *intercom.Client, *intercom.Session) {
	t.Helper()
	holder := brokertest.Connect(t, home)
	s, err := holder.Attach(context.Background(), intercom.AttachOptions{Name: name, NoDeliver: true})
	if err != nil {
		t.Fatal(err)
	}
	sender := brokertest.Connect(t, home)
	from, err := sender.Attach(context.Background(), intercom.AttachOptions{Name: name + "-peer"})
	if err != nil {
		t.Fatal(err)
	}
	return s.ID(), sender, from
}

// The requests a hook makes, against a real broker: the boundary of an
// unknown session does nothing; of a held one it reports the state and
// fetches what waits; the ack takes it out; Connected, SetState, Peek,
// WaitInbox and Reservations answer as the broker does.
func TestHookRequestsAgainstTheBroker(t *testing.T) {
	home := brokertest.Start(t)
	ctx := context.Background()
	c := connect(t, home)
	if rep, err := c.Boundary(ctx, "nobody", "tool:Bash", true); err != nil || rep.Held {
		t.Fatalf("boundary of an unknown session: %+v, %v; want not held, no error", rep, err)
	}
	sid, sender, from := held(t, home, "worker")
	if ok, err := c.Connected(ctx, sid); err != nil || !ok {
		t.Fatalf("Connected(%s) = %v, %v; want true", sid, ok, err)
	}
	if ok, err := c.Connected(ctx, "nobody"); err != nil || ok {
		t.Fatalf("Connected(nobody) = %v, %v; want false", ok, err)
	}
	if _, err := sender.Send(ctx, wire.SendRequest{From: from.ID(), To: sid, Text: "hello hook"}); err != nil {
		t.Fatal(err)
	}
	if res, err := c.WaitInbox(ctx, sid, 5*time.Second, false); err != nil || !res.Ready {
		t.Fatalf("WaitInbox: %+v, %v; want ready", res, err)
	}
	if msgs, err := c.Peek(ctx, sid, 0); err != nil || len(msgs) != 1 {
		t.Fatalf("Peek: %d messages, %v; want 1", len(msgs), err)
	}
	rep, err := c.Boundary(ctx, sid, "tool:Bash", true)
	if err != nil || !rep.Held || rep.StateError != "" || len(rep.Messages) != 1 || rep.Messages[0].Text != "hello hook" {
		t.Fatalf("boundary of a held session: %+v, %v; want held with the one message", rep, err)
	}
	rows, err := sender.List(ctx, intercom.ListOptions{Scope: "all", ID: sid})
	if err != nil || len(rows) != 1 || rows[0].Status != "tool:Bash" {
		t.Fatalf("the boundary's state report: %+v, %v; want status tool:Bash", rows, err)
	}
	if err := c.AckShown(ctx, sid, rep.Messages[0].ID); err != nil {
		t.Fatal(err)
	}
	if msgs, err := c.Inbox(ctx, sid, 0); err != nil || len(msgs) != 0 {
		t.Fatalf("inbox after the ack: %d messages, %v; want none", len(msgs), err)
	}
	if _, err := c.SetState(ctx, sid, "thinking", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetState(ctx, "nobody", "thinking", nil); !errors.As(err, new(*wire.Error)) {
		t.Fatalf("SetState of an unknown session: %v; want the broker's *wire.Error", err)
	}
	if res, err := c.WaitInbox(ctx, sid, 50*time.Millisecond, false); err != nil || res.Ready {
		t.Fatalf("WaitInbox with nothing waiting: %+v, %v; want not ready once the time passed", res, err)
	}
	if res, err := c.Reservations(ctx, wire.ReservationsRequest{}); err != nil || len(res.Reservations) != 0 {
		t.Fatalf("Reservations: %+v, %v; want none", res, err)
	}
	if n := c.Requests(); n < 10 {
		t.Fatalf("Requests() = %d after ten requests", n)
	}
}

// A broker that predates the boundary request answers it with "no
// responders", which the hook reads as wire.ErrNoBoundary (and makes the
// request as a state report and a fetch).
func TestBoundaryOfAnOldBroker(t *testing.T) {
	home := brokertest.StartWithout(t, wire.SubjBoundary)
	c := connect(t, home)
	_, err := c.Boundary(context.Background(), "s1", "idle", true)
	if !errors.Is(err, wire.ErrNoBoundary) {
		t.Fatalf("boundary against a broker without it: %v; want wire.ErrNoBoundary", err)
	}
	if ok, err := c.Connected(context.Background(), "s1"); err != nil || ok {
		t.Fatalf("the connection after no responders: %v, %v; want it still answering", ok, err)
	}
}

// An ack the broker does not confirm is journaled; the next client's fetch
// settles it and leaves the message out, so it is shown once.
func TestUnconfirmedAckIsJournaledAndSettled(t *testing.T) {
	home := brokertest.Start(t)
	ctx := context.Background()
	sid, sender, from := held(t, home, "worker")
	if _, err := sender.Send(ctx, wire.SendRequest{From: from.ID(), To: sid, Text: "once"}); err != nil {
		t.Fatal(err)
	}
	c := connect(t, home)
	rep, err := c.Boundary(ctx, sid, "", true)
	if err != nil || len(rep.Messages) != 1 {
		t.Fatalf("boundary: %+v, %v", rep, err)
	}
	id := rep.Messages[0].ID
	c.Close() // the ack cannot reach the broker now
	if err := c.AckShown(ctx, sid, id); err == nil {
		t.Fatal("AckShown on a closed connection succeeded")
	}
	layout, err := paths.Resolve(home, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(layout.AcksDir(), sid, id)); err != nil {
		t.Fatalf("the unconfirmed ack is not journaled: %v", err)
	}
	next := connect(t, home)
	rep, err = next.Boundary(ctx, sid, "", true)
	if err != nil || len(rep.Messages) != 0 {
		t.Fatalf("the next boundary: %d messages, %v; want the journaled one settled and left out", len(rep.Messages), err)
	}
	if _, err := os.Stat(filepath.Join(layout.AcksDir(), sid, id)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the settled ack is still journaled: %v", err)
	}
	if msgs, err := next.Peek(ctx, sid, 0); err != nil || len(msgs) != 0 {
		t.Fatalf("the broker still has %d messages (%v) after the settled ack", len(msgs), err)
	}
}

// With no broker and NoSpawn the request fails as spawn.ErrNoBroker; a
// home that must exist and does not fails as spawn.ErrHomeGone.
func TestNoBroker(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("INTERCOM_SOCKET", "")
	_, err := Connect(context.Background(), Options{Home: home, NoSpawn: true})
	if !errors.Is(err, spawn.ErrNoBroker) {
		t.Fatalf("connect with no broker: %v; want spawn.ErrNoBroker", err)
	}
	_, err = Connect(context.Background(), Options{Home: filepath.Join(home, "gone"), ExistingHome: true})
	if !errors.Is(err, spawn.ErrHomeGone) {
		t.Fatalf("connect to a missing home that must exist: %v; want spawn.ErrHomeGone", err)
	}
}

// Once the connection is gone (the broker restarted under a hook), every
// request fails with an error rather than an empty answer, and an ack
// that could not be confirmed is journaled for the session's next fetch.
func TestRequestsFailOnceTheConnectionIsGone(t *testing.T) {
	home := brokertest.Start(t)
	sid, _, _ := held(t, home, "gone")
	c := connect(t, home)
	c.Close()
	ctx := context.Background()
	if _, err := c.Inbox(ctx, sid, 10); err == nil {
		t.Error("Inbox on a closed connection: no error")
	}
	if _, err := c.Peek(ctx, sid, 10); err == nil {
		t.Error("Peek on a closed connection: no error")
	}
	if _, err := c.Connected(ctx, sid); err == nil {
		t.Error("Connected on a closed connection: no error")
	}
	if _, err := c.WaitInbox(ctx, sid, time.Second, false); err == nil {
		t.Error("WaitInbox on a closed connection: no error")
	}
	if _, err := c.Reservations(ctx, wire.ReservationsRequest{}); err == nil {
		t.Error("Reservations on a closed connection: no error")
	}
	if err := c.AckShown(ctx, sid, "m-unconfirmed"); err == nil {
		t.Error("AckShown on a closed connection: no error")
	}
	if got := c.journal.List(sid); len(got) != 1 || got[0] != "m-unconfirmed" {
		t.Errorf("journaled after the failed ack: %q, want m-unconfirmed", got)
	}
}

// A broker that accepted the hook's connection and died before greeting
// it (kill -9 during a restart) read nothing: the request is sent again on
// a new connection and answered by the broker that took the socket over.
func TestRequestDialsAgainWhenTheBrokerDiedBeforeGreeting(t *testing.T) {
	home, l := brokertest.NewHome(t)
	accept := brokertest.DyingSocket(t, l)
	c := connect(t, home)
	accepted := accept()
	brokertest.StartAt(t, l)
	done := make(chan error, 1)
	go func() {
		_, err := c.Reservations(context.Background(), wire.ReservationsRequest{})
		done <- err
	}()
	// Read the request (the dying broker had it queued), then die without
	// a word.
	buf := make([]byte, 4096)
	if _, err := accepted.Read(buf); err != nil {
		t.Fatal(err)
	}
	accepted.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("request after the broker died before greeting: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no answer within 30 s")
	}
	if c.Requests() != 2 {
		t.Errorf("Requests() = %d, want 2 (the first, unheard, and its resend)", c.Requests())
	}
}

// A home deleted while the hook dials again is reported as gone, not as a
// broker that does not answer.
func TestRequestDialsAgainIntoADeletedHome(t *testing.T) {
	home, l := brokertest.NewHome(t)
	accept := brokertest.DyingSocket(t, l)
	c, err := Connect(context.Background(), Options{Home: home, NoSpawn: true, ExistingHome: true, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	accepted := accept()
	if err := os.RemoveAll(home); err != nil {
		t.Fatal(err)
	}
	accepted.Close()
	if _, err := c.Reservations(context.Background(), wire.ReservationsRequest{}); !errors.Is(err, spawn.ErrHomeGone) {
		t.Fatalf("request after the broker died and the home went: %v; want spawn.ErrHomeGone", err)
	}
}
