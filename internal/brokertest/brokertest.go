// Package brokertest starts a real intercom broker in-process, on a
// temporary home, for the tests of the packages built on it: Badger in
// t.TempDir(), the real Unix-socket gateway, clients through pkg/intercom.
package brokertest

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/intercom-dev/intercom/internal/broker"
	"github.com/intercom-dev/intercom/internal/paths"
	"github.com/intercom-dev/intercom/pkg/intercom"
)

// Start runs a broker on a new home under t.TempDir() until t ends and
// returns the home.
func Start(t testing.TB) string {
	t.Helper()
	return StartConfigured(t, "")
}

// StartWithout is Start with a broker that leaves the API subjects
// without unanswered, as a broker that predates them does.
func StartWithout(t testing.TB, without ...string) string {
	t.Helper()
	return start(t, "", without)
}

// StartConfigured is Start with config.json holding config ("" for none).
func StartConfigured(t testing.TB, config string) string {
	t.Helper()
	return start(t, config, nil)
}

func start(t testing.TB, config string, without []string) string {
	t.Helper()
	home := filepath.Join(t.TempDir(), "home")
	var err error
	if config != "" {
		if err = os.MkdirAll(home, 0o700); err == nil {
			err = os.WriteFile(filepath.Join(home, "config.json"), []byte(config), 0o600)
		}
	}
	var l paths.Layout
	if err == nil {
		l, err = paths.Resolve(home, "")
	}
	var b *broker.Broker
	if err == nil {
		b, err = broker.Start(broker.Options{Layout: l, Logger: slog.New(slog.DiscardHandler), Without: without})
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b.Close()
		os.RemoveAll(l.SocketDir())
	})
	return home
}

// NewHome makes a home under t.TempDir() and its socket directory, with
// no broker yet: for a test that puts something else on the socket first,
// then StartAt.
func NewHome(t testing.TB) (string, paths.Layout) {
	t.Helper()
	home := filepath.Join(t.TempDir(), "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := paths.Resolve(home, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(l.SocketDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(l.SocketDir()) })
	return home, l
}

// DyingSocket listens on l's socket as a broker about to die does: accept
// waits for the first connection, closes the listener (the socket file goes
// with it) and returns that connection, which the test closes unanswered.
func DyingSocket(t testing.TB, l paths.Layout) (accept func() net.Conn) {
	t.Helper()
	ln, err := net.Listen("unix", l.Socket)
	if err != nil {
		t.Fatal(err)
	}
	return func() net.Conn {
		t.Helper()
		defer ln.Close()
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
}

// StartAt runs a broker on l until t ends.
func StartAt(t testing.TB, l paths.Layout) {
	t.Helper()
	b, err := broker.Start(broker.Options{Layout: l, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
}

// Connect opens a client of the broker of home (never spawning one),
// closed when t ends.
func Connect(t testing.TB, home string) *intercom.Client {
	t.Helper()
	c, err := intercom.Connect(context.Background(), intercom.Options{Home: home, NoSpawn: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}
