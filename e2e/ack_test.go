package e2e

// Fault tests of issue 20: an ack that did not reach the broker (it was
// frozen, then killed, between a message being shown and its ack) is
// retried by the holder that showed the message, first thing after the
// reconnect; the message is never shown twice by that holder, is not left
// queued, and its trace keeps the push from before the kill.

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// freezeBroker SIGSTOPs h's broker and waits until it is stopped; requests
// sent from now on are never answered by it.
func freezeBroker(t *testing.T, h *H) int {
	t.Helper()
	pid := h.BrokerPid()
	if pid == 0 {
		t.Fatal("no broker to freeze")
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	Eventually(t, msgWait, func() bool { return procState(pid) == 'T' }, "broker %d to stop", pid)
	return pid
}

// awaitTraceStored waits until the broker has written every push and fetch
// it recorded to the store (they are committed with the next batch).
func awaitTraceStored(t *testing.T, c *intercom.Client) {
	t.Helper()
	Eventually(t, msgWait, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st, err := intercom.Call[wire.Stats](ctx, c, wire.SubjStats, struct{}{})
		return err == nil && st.TraceEventsPending == 0
	}, "trace events to be stored")
}

// procState is the state letter of /proc/pid/stat (R, S, T, Z...).
func procState(pid int) byte {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || len(s) < i+3 {
		return 0
	}
	return s[i+2]
}

// TestFaultLostAckRetriedAfterReconnect: a pkg/intercom holder (as used by
// attach, the MCP server and the UI) shows a message; its ack goes to a
// frozen broker and fails; the broker is killed. After the reconnect the
// holder's ack is confirmed before its re-registration flushes the backlog,
// so the message is neither queued nor shown again, and its trace still has
// the push from before the kill.
func TestFaultLostAckRetriedAfterReconnect(t *testing.T) {
	t.Parallel()
	h := newMsgH(t)
	c := msgClient(t, h)
	ctx, cancel := context.WithTimeout(context.Background(), 3*msgWait)
	defer cancel()
	held, err := c.Attach(ctx, intercom.AttachOptions{Name: "held", Cwd: h.Cwd})
	if err != nil {
		t.Fatal(err)
	}
	src := msgSender(t, h, c, "src")
	reconnected := make(chan struct{}, 8)
	c.OnReconnect(func() { reconnected <- struct{}{} })
	sent, err := c.Send(ctx, wire.SendRequest{From: src, To: held.ID(), Text: "shown once"})
	if err != nil {
		t.Fatal(err)
	}
	m := <-held.Messages()
	if m.ID != sent.ID {
		t.Fatalf("holder got %s, want %s", m.ID, sent.ID)
	}
	awaitTraceStored(t, c)
	freezeBroker(t, h)
	killedAt := time.Now()
	actx, acancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err = held.Ack(actx, m.ID)
	acancel()
	if err == nil {
		t.Fatal("a frozen broker confirmed an ack")
	}
	if n := held.PendingAcks(); n != 1 {
		t.Fatalf("pending acks after a failed ack: %d, want 1", n)
	}
	h.KillBroker()
	select { // hooks run once the held sessions are re-registered
	case <-reconnected:
	case <-ctx.Done():
		t.Fatal("no reconnect after the broker was killed")
	}
	// Acked before the re-registration: nothing is queued right now.
	if msgs, err := c.Peek(ctx, held.ID(), 0); err != nil || len(msgs) != 0 {
		t.Fatalf("inbox --peek after the reconnect: %v (%v), want nothing", msgs, err)
	}
	rows, err := c.List(ctx, intercom.ListOptions{Scope: "all", Cwd: h.Cwd})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.ID == held.ID() && r.Queued != 0 {
			t.Fatalf("queued after the reconnect: %d, want 0", r.Queued)
		}
	}
	if n := held.PendingAcks(); n != 0 {
		t.Fatalf("pending acks after the reconnect: %d, want 0", n)
	}
	tr, err := c.Trace(ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if tr.State != "acked" || len(tr.Pushed) != 1 || !tr.Pushed[0].Before(killedAt) {
		t.Fatalf("trace after the kill: %+v, want acked with the one push from before the kill", tr)
	}
	// Not shown again: the next message this holder gets is the marker.
	if _, err := c.Send(ctx, wire.SendRequest{From: src, To: held.ID(), Text: "marker"}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-held.Messages():
		if got.Text != "marker" {
			t.Fatalf("holder got %q (%s) after the reconnect, want the marker", got.Text, got.ID)
		}
	case <-ctx.Done():
		t.Fatal("marker not delivered")
	}
}
