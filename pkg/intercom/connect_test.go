package intercom_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/internal/brokertest"
	"github.com/intercom-dev/intercom/pkg/intercom"
)

// TestConnectDialsAgainWhenTheBrokerGoesAway: a broker that accepts the
// connection and dies before greeting it (kill -9 during a restart) does
// not fail the client: Connect dials again and reaches the broker that
// took the socket over.
func TestConnectDialsAgainWhenTheBrokerGoesAway(t *testing.T) {
	home, l := brokertest.NewHome(t)
	accept := brokertest.DyingSocket(t, l)
	type result struct {
		c   *intercom.Client
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := intercom.Connect(context.Background(), intercom.Options{Home: home, NoSpawn: true})
		done <- result{c, err}
	}()
	accepted := accept()
	brokertest.StartAt(t, l)
	accepted.Close() // the dying broker's end: never greeted

	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Connect did not return within 30 s")
	}
	if r.err != nil {
		t.Fatalf("Connect after the broker went away mid-handshake: %v", r.err)
	}
	defer r.c.Close()
	if _, err := r.c.List(context.Background(), intercom.ListOptions{}); err != nil {
		t.Fatalf("list through the new broker: %v", err)
	}
}

// What Connect dials again after, and what it does not.
func TestWentAway(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("read unix @->broker.sock: %w", syscall.ECONNRESET), true},
		{fmt.Errorf("dial: %w", intercom.ErrNoBroker), true},
		{nats.ErrConnectionClosed, true},
		{nats.ErrTimeout, false}, // a hung broker: not dialled again
		{intercom.ErrRefused, false},
		{fmt.Errorf("open: %w", os.ErrPermission), false},
	} {
		if got := intercom.WentAway(tc.err); got != tc.want {
			t.Errorf("WentAway(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// A home deleted while Connect dials again is reported as gone.
func TestConnectDialsAgainIntoADeletedHome(t *testing.T) {
	home, l := brokertest.NewHome(t)
	accept := brokertest.DyingSocket(t, l)
	done := make(chan error, 1)
	go func() {
		c, err := intercom.Connect(context.Background(), intercom.Options{Home: home, NoSpawn: true})
		if c != nil {
			c.Close()
		}
		done <- err
	}()
	accepted := accept()
	if err := os.RemoveAll(home); err != nil {
		t.Fatal(err)
	}
	accepted.Close()
	select {
	case err := <-done:
		if !errors.Is(err, intercom.ErrHomeGone) {
			t.Fatalf("Connect after the broker died and the home went: %v; want ErrHomeGone", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Connect did not return within 30 s")
	}
}
