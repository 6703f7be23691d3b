package e2e

// Promises of the documentation that had no test of their own (issue 22):
// the replace-mode caps, an obligation retiring when its asker goes, the Go
// client dropping a redelivery, the intercom trace command, and the retry
// memory of client ids and of acks of unstored ids, with its expiry.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

func prmCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// prmAttach holds the session o describes on c.
func prmAttach(t *testing.T, ctx context.Context, c *intercom.Client, o intercom.AttachOptions) *intercom.Session {
	t.Helper()
	s, err := c.Attach(ctx, o)
	if err != nil {
		t.Fatalf("attach %s: %v", o.Name, err)
	}
	return s
}

// prmNext is the next message pushed to s.
func prmNext(t *testing.T, s *intercom.Session) wire.Message {
	t.Helper()
	select {
	case m := <-s.Messages():
		return m
	case <-time.After(msgWait):
		t.Fatalf("no message for %s within %s", s.Info().Name, msgWait)
	}
	return wire.Message{}
}

// prmCode is the wire error code of err, or "".
func prmCode(err error) string {
	var we *wire.Error
	if errors.As(err, &we) {
		return we.Code
	}
	return ""
}

// Replace mode keeps at most 100 undelivered threads per sender and 1,000
// in all; one more is refused with code full ("queue is full"), a newer
// message of a thread already held still replaces it, and the caps free up
// once the held messages are delivered.
func TestPromiseReplaceModeCaps(t *testing.T) {
	t.Parallel()
	h := newMsgH(t)
	ctx := prmCtx(t)
	c := msgClient(t, h)
	rcv := prmAttach(t, ctx, c, intercom.AttachOptions{Name: "rcv", Cwd: h.Cwd})
	if err := rcv.SetState(ctx, "thinking", nil); err != nil { // busy: queued messages are held
		t.Fatal(err)
	}
	var senders []string
	for i := range 11 {
		senders = append(senders, msgSender(t, h, c, fmt.Sprintf("snd-%d", i)))
	}
	send := func(from, thread, text string) error {
		_, err := c.Send(ctx, wire.SendRequest{From: from, To: rcv.ID(), Text: text,
			Delivery: wire.DeliveryQueue, QueueMode: "replace", Thread: thread})
		return err
	}
	full := func(err error, what string) {
		t.Helper()
		if prmCode(err) != wire.CodeFull || !strings.Contains(err.Error(), "queue is full") {
			t.Fatalf("%s: %v, want code full saying the queue is full", what, err)
		}
	}
	for i := range 100 {
		if err := send(senders[0], fmt.Sprintf("t%d", i), "v1"); err != nil {
			t.Fatalf("sender 0 thread %d: %v", i, err)
		}
	}
	full(send(senders[0], "t100", "v1"), "sender 0's 101st thread")
	if err := send(senders[0], "t5", "v2"); err != nil {
		t.Fatalf("a newer message of a held thread at the per-sender cap: %v", err)
	}
	for k := 1; k < 10; k++ {
		for i := range 100 {
			if err := send(senders[k], fmt.Sprintf("t%d", i), "v1"); err != nil {
				t.Fatalf("sender %d thread %d (under the 1,000 cap): %v", k, i, err)
			}
		}
	}
	full(send(senders[10], "t0", "v1"), "a fresh sender's first thread at 1,000 in all")
	r := msgFails(t, h, 1, []string{"queue is full"}, "send", "--delivery", "queue", "--queue-mode", "replace", "--thread", "cli", "rcv", "from the CLI")
	if strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
		t.Fatalf("the refusal is not one line: %q", r.Stderr)
	}

	// Idle: the 1,000 held threads are delivered (t5 of sender 0 as v2
	// only), acked, and the caps free up.
	if err := rcv.SetState(ctx, "idle", nil); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for range 1000 {
		m := prmNext(t, rcv)
		key := m.From.ID + "/" + m.Thread
		if _, dup := got[key]; dup {
			t.Fatalf("thread %s delivered twice", key)
		}
		got[key] = m.Text
		if err := rcv.Ack(ctx, m.ID); err != nil {
			t.Fatal(err)
		}
	}
	if v := got[senders[0]+"/t5"]; v != "v2" {
		t.Fatalf("sender 0's t5 delivered as %q, want only the newer v2", v)
	}
	Eventually(t, msgWait, func() bool { return send(senders[10], "t0", "after") == nil }, "a fresh sender's thread to be accepted once the held ones were delivered")
	if m := prmNext(t, rcv); m.Text != "after" || m.From.ID != senders[10] {
		t.Fatalf("next message %q from %s, want the fresh sender's", m.Text, m.From.ID)
	}
}

// An obligation retires when its asker disconnects without a word: a CLI
// ask killed with SIGKILL, and a held session whose connection is cut.
func TestPromiseAskRetiresWhenAskerDisconnects(t *testing.T) {
	t.Parallel()
	h := newMsgH(t)
	a, _ := h.Attach("--name", "alice")
	pending := func() int {
		t.Helper()
		var p struct {
			Asks []any `json:"asks"`
		}
		h.JSON(&p, "--session", "alice", "pending")
		return len(p.Asks)
	}

	ask := h.Start("ask", "alice", "do you still need me?", "--timeout", "10m")
	msgExpect(t, a, "do you still need me?")
	if n := pending(); n != 1 {
		t.Fatalf("alice has %d pending asks, want the CLI's", n)
	}
	ask.Kill()
	Eventually(t, msgWait, func() bool { return pending() == 0 }, "the obligation to retire after the CLI asker was killed")
	msgFails(t, h, 1, []string{"No active intercom context"}, "--session", "alice", "reply", "too late")

	ctx := prmCtx(t)
	c := msgClient(t, h)
	asker := prmAttach(t, ctx, c, intercom.AttachOptions{Name: "asker", Cwd: h.Cwd, NoDeliver: true})
	asked := make(chan error, 1)
	go func() {
		_, err := c.Ask(ctx, wire.SendRequest{From: asker.ID(), To: "alice", Text: "and you?"}, 10*time.Minute)
		asked <- err
	}()
	msgExpect(t, a, "and you?")
	if n := pending(); n != 1 {
		t.Fatalf("alice has %d pending asks, want the held asker's", n)
	}
	c.Conn().Close() // no goodbye, no cancel: the connection is gone
	Eventually(t, msgWait, func() bool { return pending() == 0 }, "the obligation to retire after the asker's connection was cut")
	select {
	case err := <-asked:
		if err == nil {
			t.Fatalf("the cut asker got a reply")
		}
	case <-time.After(msgWait):
		t.Fatalf("the cut asker's Ask did not return within %s", msgWait)
	}
}

// The Go client hands a message to its holder once: when the broker pushes
// it again (an unacked message after the broker restarted under the same
// client), the Session drops it, while a new client resuming the session
// gets it.
func TestPromiseGoClientDropsRedelivery(t *testing.T) {
	t.Parallel()
	h := newMsgH(t)
	ctx := prmCtx(t)
	rc := msgClient(t, h)
	reconnected := make(chan struct{}, 16)
	rc.OnReconnect(func() { reconnected <- struct{}{} })
	rcv := prmAttach(t, ctx, rc, intercom.AttachOptions{Name: "rcv", Cwd: h.Cwd})
	var sent struct {
		ID string `json:"id"`
	}
	h.JSON(&sent, "send", "rcv", "once only")
	if m := prmNext(t, rcv); m.ID != sent.ID {
		t.Fatalf("first delivery %+v, want %s", m, sent.ID)
	}
	// Not acked. The broker dies and the client brings up another, which
	// pushes the unacked message again to the re-registered holder.
	h.KillBroker()
	Await(t, reconnected, msgWait, "the client to reconnect to a new broker")
	Eventually(t, msgWait, func() bool {
		tr, err := rc.Trace(ctx, sent.ID)
		return err == nil && tr.State == "pushed" && len(tr.Pushed) > 0
	}, "the new broker to push %s again", sent.ID)
	h.OK("send", "rcv", "marker")
	m := prmNext(t, rcv)
	if m.Text != "marker" {
		t.Fatalf("after the redelivery the holder got %q (%s), want the marker: the redelivery was not dropped", m.Text, m.ID)
	}
	if err := rcv.Ack(ctx, m.ID); err != nil {
		t.Fatal(err)
	}
	// A new client is a new holder: it is shown the unacked message.
	id := rcv.ID()
	rc.Close()
	c2 := msgClient(t, h)
	again := prmAttach(t, ctx, c2, intercom.AttachOptions{ResumeID: id, Cwd: h.Cwd})
	if m := prmNext(t, again); m.ID != sent.ID {
		t.Fatalf("resumed holder got %q (%s), want the unacked %s", m.Text, m.ID, sent.ID)
	}
}

// intercom trace shows a message's timeline: human lines and --json, for a
// delivered message and for one waiting in an offline inbox; an unknown id
// is one clear line and exit 1.
func TestPromiseTraceCommand(t *testing.T) {
	t.Parallel()
	h := newMsgH(t)
	rcv, rev := h.Attach("--name", "rcv")
	h.Attach("--name", "snd")
	var sent struct {
		ID string `json:"id"`
	}
	h.JSON(&sent, "--session", "snd", "send", "rcv", "trace me")
	msgExpect(t, rcv, "trace me")
	var tr wire.Trace
	Eventually(t, msgWait, func() bool {
		tr = wire.Trace{}
		h.JSON(&tr, "trace", sent.ID)
		return tr.State == "acked"
	}, "the trace of %s to say acked", sent.ID)
	if tr.ID != sent.ID || tr.From.Name != "snd" || tr.To != msgStr(rev["id"]) || tr.Stored.IsZero() || len(tr.Pushed) == 0 ||
		tr.Acked == nil || tr.Acked.Before(tr.Stored) || tr.Pushed[0].Before(tr.Stored) {
		t.Fatalf("trace --json of a delivered message: %+v", tr)
	}
	human := h.OK("trace", sent.ID)
	for _, want := range []string{
		fmt.Sprintf("message %s from snd to %s: acked", sent.ID, msgStr(rev["id"])),
		"\n  stored    ", "\n  pushed    ", "\n  delivered ",
	} {
		if !strings.Contains(human, want) {
			t.Fatalf("trace output lacks %q:\n%s", want, human)
		}
	}

	// Waiting in the inbox of a disconnected session: stored, nothing else.
	msgDetach(t, h, rcv, msgStr(rev["id"]))
	h.JSON(&sent, "--session", "snd", "send", "rcv", "wait for me")
	tr = wire.Trace{}
	h.JSON(&tr, "trace", sent.ID)
	if tr.State != "stored" || len(tr.Pushed) != 0 || len(tr.Fetched) != 0 || tr.Acked != nil {
		t.Fatalf("trace of a message in an offline inbox: %+v", tr)
	}
	if human := h.OK("trace", sent.ID); !strings.Contains(human, ": stored\n") || strings.Contains(human, "pushed") || strings.Contains(human, "delivered") {
		t.Fatalf("trace output for a stored message:\n%s", human)
	}

	r := msgFails(t, h, 1, []string{"no message", "mnotamessage0000"}, "trace", "mnotamessage0000")
	if strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
		t.Fatalf("unknown id: not one line: %q", r.Stderr)
	}
	msgFails(t, h, 2, nil, "trace")
}

// prmMemoryH is a home whose broker remembers retries for memory ("" for
// the default 24 hours); the broker is started through the CLI, so the
// config's brokerArgs apply.
func prmMemoryH(t *testing.T, memory string) *H {
	t.Helper()
	h := newMsgH(t)
	if memory != "" {
		h.WriteConfig(`{"idleExitMs": 0, "brokerArgs": ["--retry-memory=` + memory + `"]}`)
	}
	h.OK("list")
	return h
}

// prmPair holds a receiving and a sending session with fixed ids in h: a
// message id derives from the sender and the client message id, so the
// same pair in two homes gives the same message ids.
func prmPair(t *testing.T, ctx context.Context, h *H) (*intercom.Client, *intercom.Session, *intercom.Session) {
	t.Helper()
	c := msgClient(t, h)
	rcv := prmAttach(t, ctx, c, intercom.AttachOptions{Name: "rcv", RequestID: "prm-receiver-0001", Cwd: h.Cwd})
	snd := prmAttach(t, ctx, c, intercom.AttachOptions{Name: "snd", RequestID: "prm-sender-0001", Cwd: h.Cwd, NoDeliver: true})
	return c, rcv, snd
}

// A client message id is remembered: a retry after its message was
// delivered and acked is answered duplicate and shown to nobody; with the
// memory shortened (the 24 hours are a broker option), the same retry is
// stored again once it has expired.
func TestPromiseRetryMemoryOfClientIDs(t *testing.T) {
	t.Parallel()
	for _, memory := range []string{"", "1s"} {
		t.Run("memory="+memory, func(t *testing.T) {
			t.Parallel()
			ctx := prmCtx(t)
			h := prmMemoryH(t, memory)
			c, rcv, snd := prmPair(t, ctx, h)
			req := wire.SendRequest{From: snd.ID(), To: rcv.ID(), Text: "exactly once", ClientMsgID: "k-1"}
			first, err := c.Send(ctx, req)
			if err != nil || first.Duplicate {
				t.Fatalf("first send: %+v, %v", first, err)
			}
			if m := prmNext(t, rcv); m.ID != first.ID {
				t.Fatalf("delivered %+v, want %s", m, first.ID)
			}
			if err := rcv.Ack(ctx, first.ID); err != nil {
				t.Fatal(err)
			}
			msgAwaitAcked(t, c, rcv.ID())
			if memory == "" {
				retry, err := c.Send(ctx, req)
				if err != nil || !retry.Duplicate || retry.ID != first.ID {
					t.Fatalf("retry of an acked message: %+v, %v; want duplicate %s", retry, err, first.ID)
				}
				prmMarker(t, ctx, c, snd, rcv)
				return
			}
			var retry wire.SendReply
			Eventually(t, msgWait, func() bool {
				retry, err = c.Send(ctx, req)
				if err != nil {
					t.Fatalf("retry: %v", err)
				}
				return !retry.Duplicate
			}, "the client id's memory (1s) to expire")
			// Stored again under the same id (it derives from the client
			// id): this holder, which was shown it once, acks the push
			// again without showing it (a session never hands a message on
			// twice), so the inbox empties and nothing new is shown.
			if retry.ID != first.ID {
				t.Fatalf("after the memory expired the retry was answered %+v; want the id %s again", retry, first.ID)
			}
			msgAwaitAcked(t, c, rcv.ID())
			select {
			case m := <-rcv.Messages():
				t.Fatalf("the holder was shown %+v a second time", m)
			default:
			}
		})
	}
}

// An ack of an id the broker has not stored (a holder acking an early push
// whose commit a dying broker lost) is remembered: the sender's retry with
// that id is then answered duplicate and not shown again; after the memory
// expires, the same send is stored and delivered.
func TestPromiseRetryMemoryOfUnstoredAcks(t *testing.T) {
	t.Parallel()
	ctx := prmCtx(t)
	// The id the send will get, learnt from the same pair in another home.
	ref := prmMemoryH(t, "")
	rc, _, rs := prmPair(t, ctx, ref)
	req := wire.SendRequest{From: rs.ID(), To: "prm-receiver-0001", Text: "shown before it was stored", ClientMsgID: "k-2"}
	learnt, err := rc.Send(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, memory := range []string{"", "1s"} {
		t.Run("memory="+memory, func(t *testing.T) {
			t.Parallel()
			ctx := prmCtx(t)
			h := prmMemoryH(t, memory)
			c, rcv, snd := prmPair(t, ctx, h)
			if err := rcv.Ack(ctx, learnt.ID); err != nil {
				t.Fatalf("ack of the unstored %s: %v", learnt.ID, err)
			}
			r := req
			r.From = snd.ID()
			if memory == "" {
				got, err := c.Send(ctx, r)
				if err != nil || !got.Duplicate || got.ID != learnt.ID {
					t.Fatalf("send of an id acked before it was stored: %+v, %v; want duplicate %s", got, err, learnt.ID)
				}
				prmMarker(t, ctx, c, snd, rcv)
				return
			}
			var got wire.SendReply
			Eventually(t, msgWait, func() bool {
				got, err = c.Send(ctx, r)
				if err != nil {
					t.Fatalf("send: %v", err)
				}
				return !got.Duplicate
			}, "the memory (1s) of the unstored ack to expire")
			if m := prmNext(t, rcv); m.ID != learnt.ID || got.ID != learnt.ID {
				t.Fatalf("after the memory expired: stored as %s, delivered %+v; want %s", got.ID, m, learnt.ID)
			}
		})
	}
}

// prmMarker sends a marker from snd to rcv and checks it is rcv's next
// message: nothing else was shown in between.
func prmMarker(t *testing.T, ctx context.Context, c *intercom.Client, snd, rcv *intercom.Session) {
	t.Helper()
	res, err := c.Send(ctx, wire.SendRequest{From: snd.ID(), To: rcv.ID(), Text: "marker"})
	if err != nil {
		t.Fatal(err)
	}
	if m := prmNext(t, rcv); m.ID != res.ID {
		data, _ := json.Marshal(m)
		t.Fatalf("next message %s, want only the marker %s", data, res.ID)
	}
}
