package e2e

// Messaging (SPEC "Messages (F3–F6)", issue 3): send, ask, reply, pending,
// inbox, forget, delivery modes, attachments, limits and the exactly-once
// guarantees across holder and broker crashes. Everything runs against the
// real binaries over real sockets; where a precise interleaving is needed
// (a holder that has a message but has not acked it, 1,000 or 10,000 sends)
// the test process speaks to the same broker through pkg/intercom.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

const msgWait = 20 * time.Second // upper bound for anything awaited

// newMsgH is newH for these tests: the broker runs until cleanup kills it
// (restarts happen only where a test kills it), the race-built CLI does not
// sleep its default second at exit (GORACE atexit_sleep_ms), and a data race
// reported by the broker fails the test.
func newMsgH(t *testing.T) *H {
	t.Helper()
	h := newH(t)
	h.WriteConfig(`{"idleExitMs": 0}`) // no idle exits in the middle of a test
	h.Env = append(h.Env, "GORACE=atexit_sleep_ms=0")
	t.Cleanup(func() {
		if data, err := os.ReadFile(h.Layout.BrokerLog()); err == nil && strings.Contains(string(data), "DATA RACE") {
			t.Errorf("the broker reported a data race:\n%s", data)
		}
	})
	return h
}

// msgClient connects the test process to h's broker through pkg/intercom,
// starting the real broker binary if none runs. It is closed at cleanup
// (before the broker is killed).
func msgClient(t *testing.T, h *H) *intercom.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), msgWait)
	defer cancel()
	c, err := intercom.Connect(ctx, intercom.Options{
		Home: h.Home, Socket: h.Layout.Socket,
		BrokerCommand: filepath.Join(binDir, "intercom-broker"), Name: "e2e-" + t.Name(),
	})
	if err != nil {
		t.Fatalf("connect in-process client: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// msgAwaitWaiters waits until h's broker holds n inbox waiters.
func msgAwaitWaiters(t *testing.T, h *H, n int) {
	t.Helper()
	c := msgClient(t, h)
	Eventually(t, msgWait, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), msgWait)
		defer cancel()
		st, err := intercom.Call[wire.Stats](ctx, c, wire.SubjStats, struct{}{})
		if err != nil {
			t.Fatalf("stats: %v", err)
		}
		return st.Waiters == n
	}, "%d inbox waiter(s) on the broker", n)
}

// msgSender registers an ephemeral, non-receiving session to send from.
func msgSender(t *testing.T, h *H, c *intercom.Client, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), msgWait)
	defer cancel()
	s, err := c.Attach(ctx, intercom.AttachOptions{Name: name, Cwd: h.Cwd, Ephemeral: true, NoDeliver: true})
	if err != nil {
		t.Fatalf("attach sender %s: %v", name, err)
	}
	return s.ID()
}

// msgNext returns the next "message" event of an attach --json process.
func msgNext(t *testing.T, p *Proc) map[string]any {
	t.Helper()
	for {
		ev := p.Event(msgWait)
		if ev["event"] == "message" {
			return ev
		}
	}
}

// msgExpect waits for the next message and checks its text.
func msgExpect(t *testing.T, p *Proc, text string) map[string]any {
	t.Helper()
	ev := msgNext(t, p)
	if ev["text"] != text {
		t.Fatalf("next message is %q (%v), want %q", ev["text"], ev, text)
	}
	return ev
}

// msgExit waits for p to end and returns its whole stdout and exit code.
func msgExit(t *testing.T, p *Proc) (string, int) {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(msgWait):
		t.Fatalf("%v still running after %s; stderr: %s", p.Cmd.Args, msgWait, p.Stderr())
	}
	var lines []string
	for {
		select {
		case l := <-p.lines:
			lines = append(lines, l)
		default:
			return strings.Join(lines, "\n"), p.Cmd.ProcessState.ExitCode()
		}
	}
}

// msgFails runs intercom, expecting exit code want and stderr containing
// every one of subs.
func msgFails(t *testing.T, h *H, want int, subs []string, args ...string) Result {
	t.Helper()
	r := h.Run(args...)
	if r.Code != want {
		t.Fatalf("intercom %q: exit %d, want %d\nstdout: %s\nstderr: %s", args, r.Code, want, r.Stdout, r.Stderr)
	}
	for _, s := range subs {
		if !strings.Contains(r.Stderr, s) {
			t.Fatalf("intercom %q: stderr %q does not mention %q", args, r.Stderr, s)
		}
	}
	return r
}

// msgDetach ends an attach cleanly (SIGTERM → unregister): the session stays
// known, disconnected, and keeps receiving into its inbox.
func msgDetach(t *testing.T, h *H, p *Proc, id string) {
	t.Helper()
	p.Signal(syscall.SIGTERM)
	msgAwaitState(t, h, id, wire.StateDisconnected)
}

// msgRow returns the list --scope all --all row of session id.
func msgRow(t *testing.T, h *H, id string) map[string]any {
	t.Helper()
	for _, r := range h.Sessions("--scope", "all", "--all") {
		if r["id"] == id {
			return r
		}
	}
	return nil
}

func msgAwaitState(t *testing.T, h *H, id, state string) {
	t.Helper()
	Eventually(t, msgWait, func() bool {
		r := msgRow(t, h, id)
		return r != nil && r["state"] == state
	}, "session %s to be %s", id, state)
}

// msgAwaitAcked waits until nothing is stored for session id any more, i.e.
// the holder's acks are durable.
func msgAwaitAcked(t *testing.T, c *intercom.Client, id string) {
	t.Helper()
	Eventually(t, msgWait, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		msgs, err := c.Inbox(ctx, id, 0)
		return err == nil && len(msgs) == 0
	}, "inbox of %s to be empty (acked)", id)
}

func msgStr(v any) string { s, _ := v.(string); return s }

func msgSub(m map[string]any, k string) map[string]any { v, _ := m[k].(map[string]any); return v }

// TestMsgSteerJSONShape: a steer message reaches an attached holder at once
// with the documented --json shape; a reply carries reply_to.
func TestMsgSteerJSONShape(t *testing.T) {
	t.Parallel()
	h := newMsgH(t)
	rcv, rev := h.Attach("--name", "rcv")
	snd, sev := h.Attach("--name", "snd")

	var res struct {
		ID        string       `json:"id"`
		Offline   bool         `json:"offline"`
		Duplicate bool         `json:"duplicate"`
		To        wire.Session `json:"to"`
	}
	h.JSON(&res, "--session", "snd", "send", "rcv", "hello", "there")
	if !strings.HasPrefix(res.ID, "m") || res.Offline || res.Duplicate || res.To.ID != rev["id"] {
		t.Fatalf("send result %+v", res)
	}
	m := msgExpect(t, rcv, "hello there")
	for _, k := range []string{"id", "from", "text", "delivery", "expects_reply", "attachments", "seq", "sent_at"} {
		if _, ok := m[k]; !ok {
			t.Fatalf("message lacks %q: %v", k, m)
		}
	}
	from := msgSub(m, "from")
	switch {
	case m["id"] != res.ID:
		t.Fatalf("delivered id %v, send said %s", m["id"], res.ID)
	case from["id"] != sev["id"] || from["name"] != "snd" || msgStr(from["cwd"]) == "":
		t.Fatalf("from %v, want id %v name snd and a cwd", from, sev["id"])
	case m["delivery"] != "steer" || m["expects_reply"] != false:
		t.Fatalf("delivery/expects_reply: %v", m)
	case m["seq"].(float64) <= 0:
		t.Fatalf("seq %v", m["seq"])
	}
	if att, ok := m["attachments"].([]any); !ok || len(att) != 0 {
		t.Fatalf("attachments %#v, want []", m["attachments"])
	}
	if _, ok := m["reply_to"]; ok {
		t.Fatalf("plain message has reply_to: %v", m)
	}

	// A reply names the message it answers.
	h.OK("--session", "rcv", "send", "snd", "--reply-to", res.ID, "got", "it")
	r := msgExpect(t, snd, "got it")
	if r["reply_to"] != res.ID || msgSub(r, "from")["id"] != rev["id"] || msgSub(r, "from")["name"] != "rcv" {
		t.Fatalf("reply %v, want reply_to %s from rcv", r, res.ID)
	}
}

// TestMsgExactlyOnceHolderCrash: a holder that dies after receiving a message
// but before acking it gets it again on resume; once acked it never comes
// back.
func TestMsgExactlyOnceHolderCrash(t *testing.T) {
	t.Parallel()
	h := newMsgH(t)
	p, ev := h.Attach("--name", "rcv")
	id := msgStr(ev["id"])
	msgDetach(t, h, p, id)
	if out := h.OK("send", "rcv", "m1"); !strings.Contains(out, "offline") {
		t.Fatalf("send to a detached session: %q, want it to say offline", out)
	}

	// An in-process holder receives m1 and drops its connection without acking.
	c := msgClient(t, h)
	ctx, cancel := context.WithTimeout(context.Background(), msgWait)
	defer cancel()
	s, err := c.Attach(ctx, intercom.AttachOptions{ResumeID: id, Cwd: h.Cwd})
	if err != nil {
		t.Fatal(err)
	}
	var first wire.Message
	select {
	case first = <-s.Messages():
	case <-time.After(msgWait):
		t.Fatal("resumed in-process holder got nothing")
	}
	if first.Text != "m1" {
		t.Fatalf("in-process holder got %q, want m1", first.Text)
	}
	c.Close() // like a crash: no ack, no unregister
	msgAwaitState(t, h, id, wire.StateDisconnected)

	// Resumed by the CLI: m1 again (same id), which attach acks once printed.
	p2, ev2 := h.Attach("--resume", id)
	if ev2["id"] != id {
		t.Fatalf("resume got session %v, want %s", ev2["id"], id)
	}
	if m := msgExpect(t, p2, "m1"); m["id"] != first.ID {
		t.Fatalf("redelivered id %v, want %s", m["id"], first.ID)
	}
	c2 := msgClient(t, h)
	msgAwaitAcked(t, c2, id)
	msgDetach(t, h, p2, id)

	// Acked: a later resume gets only what came after.
	h.OK("send", "rcv", "marker-1")
	p3, _ := h.Attach("--resume", id)
	msgExpect(t, p3, "marker-1")
	msgAwaitAcked(t, c2, id)

	// A real CLI holder killed with SIGKILL before it could ack: it is frozen
	// (SIGSTOP) when the message is sent, so it cannot print or ack it.
	if err := p3.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	h.OK("send", "rcv", "m2")
	p3.Kill()
	msgAwaitState(t, h, id, wire.StateDisconnected)
	p4, _ := h.Attach("--resume", id)
	msgExpect(t, p4, "m2")
	msgAwaitAcked(t, c2, id)
	msgDetach(t, h, p4, id)
	h.OK("send", "rcv", "marker-2")
	p5, _ := h.Attach("--resume", id)
	msgExpect(t, p5, "marker-2")
}

// TestMsgExactlyOnceBrokerCrash: a message accepted (stored) but not yet
// delivered survives a kill -9 of the broker and is delivered once after the
// restart; acked messages never come back after a crash; a holder that stays
// attached across the crash reconnects and keeps receiving, once.
func TestMsgExactlyOnceBrokerCrash(t *testing.T) {
	t.Parallel()
	h := newMsgH(t)
	p, ev := h.Attach("--name", "rcv")
	id := msgStr(ev["id"])
	msgDetach(t, h, p, id)
	h.OK("send", "rcv", "before-crash")
	old := h.BrokerPids()
	if len(old) != 1 {
		t.Fatalf("broker pids %v, want one", old)
	}
	h.KillBroker()

	p2, _ := h.Attach("--resume", id) // spawns a fresh broker
	if now := h.BrokerPids(); len(now) != 1 || now[0] == old[0] {
		t.Fatalf("broker pids after restart %v (before %v)", now, old)
	}
	msgExpect(t, p2, "before-crash")
	c := msgClient(t, h)
	msgAwaitAcked(t, c, id)
	c.Close()
	msgDetach(t, h, p2, id)

	// The ack is durable: crash again, and only the marker comes.
	h.KillBroker()
	h.OK("send", "rcv", "marker-1")
	p3, _ := h.Attach("--resume", id)
	msgExpect(t, p3, "marker-1")

	// The holder stays attached while the broker is killed: it reconnects by
	// itself and gets later messages once, and nothing it acked before.
	c = msgClient(t, h)
	msgAwaitAcked(t, c, id)
	c.Close()
	h.KillBroker()
	h.OK("send", "rcv", "after-crash")
	msgExpect(t, p3, "after-crash")
	h.OK("send", "rcv", "marker-2")
	msgExpect(t, p3, "marker-2")

	// Stored while the holder is frozen (pushed but not acked), then both the
	// broker and the holder die: delivered once on resume.
	c = msgClient(t, h)
	msgAwaitAcked(t, c, id)
	c.Close()
	if err := p3.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	h.OK("send", "rcv", "in-flight")
	h.KillBroker()
	p3.Kill()
	p4, _ := h.Attach("--resume", id)
	msgExpect(t, p4, "in-flight")
	h.OK("send", "rcv", "marker-3")
	msgExpect(t, p4, "marker-3")
}

// TestMsgOfflineMailbox: a detached session stays known (disconnected),
// sends to it are accepted with an offline result, and resuming it delivers
// all 1,000+ messages oldest first, none twice.
func TestMsgOfflineMailbox(t *testing.T) {
	t.Parallel()
	h := newMsgH(t)
	p, ev := h.Attach("--name", "mbox")
	id := msgStr(ev["id"])
	msgDetach(t, h, p, id)

	row := msgRow(t, h, id)
	if row == nil || row["state"] != "disconnected" || row["connected"] != false || row["name"] != "mbox" {
		t.Fatalf("list --all row of the detached session: %v", row)
	}
	if r := Row(h.Sessions("--scope", "all"), "mbox"); r != nil {
		t.Fatalf("list without --all shows the detached session: %v", r)
	}
	if out := h.OK("send", "mbox", "cli-1"); !strings.Contains(out, "offline") {
		t.Fatalf("send to offline session printed %q, want it to say offline", out)
	}
	var res map[string]any
	h.JSON(&res, "send", "mbox", "cli-2")
	if res["offline"] != true || msgStr(res["id"]) == "" {
		t.Fatalf("send --json to offline session: %v, want offline true", res)
	}

	const n = 1000
	c := msgClient(t, h)
	from := msgSender(t, h, c, "bulk")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i := 0; i < n; i++ {
		r, err := c.Send(ctx, wire.SendRequest{From: from, To: id, Text: fmt.Sprintf("bulk %04d", i)})
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if !r.Offline {
			t.Fatalf("send %d: result %+v, want offline", i, r)
		}
	}

	p2, _ := h.Attach("--resume", id, "--json")
	want := []string{"cli-1", "cli-2"}
	for i := 0; i < n; i++ {
		want = append(want, fmt.Sprintf("bulk %04d", i))
	}
	seen := map[string]bool{}
	var lastSeq float64
	for i, w := range want {
		m := msgNext(t, p2)
		if m["text"] != w {
			t.Fatalf("message %d is %q, want %q", i, m["text"], w)
		}
		mid := msgStr(m["id"])
		if seen[mid] {
			t.Fatalf("message %s delivered twice", mid)
		}
		seen[mid] = true
		if s := m["seq"].(float64); s <= lastSeq {
			t.Fatalf("message %d seq %v not after %v", i, s, lastSeq)
		} else {
			lastSeq = s
		}
	}
	h.OK("send", "mbox", "marker")
	msgExpect(t, p2, "marker")
	msgAwaitAcked(t, c, id)
}

// TestMsgQueueAndPassive: queue is held while the recipient is busy and
// released when it reports idle; passive is recorded and shown (delivery
// "passive") without waiting for idle.
func TestMsgQueueAndPassive(t *testing.T) {
	t.Parallel()
	h := newMsgH(t)
	r, _ := h.Attach("--name", "rcv")
	h.OK("--session", "rcv", "state", "thinking")
	if row := Row(h.Sessions(), "rcv"); row == nil || row["state"] != "busy" {
		t.Fatalf("rcv row after state thinking: %v", row)
	}
	var queued struct {
		ID string `json:"id"`
	}
	h.JSON(&queued, "send", "--delivery", "queue", "rcv", "queued-1")
	h.OK("send", "--delivery", "passive", "rcv", "passive-1")
	if m := msgExpect(t, r, "passive-1"); m["delivery"] != "passive" {
		t.Fatalf("passive message delivered as %v", m["delivery"])
	}
	// queued-1 is held while busy: a steer sent after it is the next event,
	// and its trace shows it stored, never pushed.
	held := func(when string) {
		t.Helper()
		h.OK("send", "rcv", "steer while "+when)
		msgExpect(t, r, "steer while "+when)
		var tr wire.Trace
		h.JSON(&tr, "trace", queued.ID)
		if tr.State != "stored" || len(tr.Pushed) != 0 {
			t.Fatalf("queued-1 while %s: trace %+v, want stored and never pushed", when, tr)
		}
	}
	held("thinking")
	h.OK("--session", "rcv", "state", "tool:bash")
	held("in a tool") // still busy
	h.OK("--session", "rcv", "state", "idle")
	if m := msgExpect(t, r, "queued-1"); m["delivery"] != "queue" {
		t.Fatalf("queued message delivered as %v", m["delivery"])
	}
	// While idle, queue goes at once.
	h.OK("send", "--delivery", "queue", "rcv", "queued-2")
	msgExpect(t, r, "queued-2")
}

// TestMsgReplaceCoalescing: with --queue-mode replace only the newest
// undelivered queued message of a (sender, recipient, thread) survives the
// coalescing window; another sender's message on the same thread is kept.
func TestMsgReplaceCoalescing(t *testing.T) {
	t.Parallel()
	h := newMsgH(t)
	r, _ := h.Attach("--name", "rcv")
	h.Attach("--name", "snd")
	h.OK("--session", "rcv", "state", "thinking")
	h.OK("send", "--queue-mode", "replace", "--thread", "build", "rcv", "other sender")
	var last time.Time
	for i := 1; i <= 5; i++ {
		last = time.Now()
		h.OK("--session", "snd", "send", "--delivery", "queue", "--queue-mode", "replace", "--thread", "build", "rcv", fmt.Sprintf("build %d/5", i))
	}
	h.OK("--session", "rcv", "state", "idle")
	got := map[string]bool{}
	for i := 0; i < 2; i++ {
		m := msgNext(t, r)
		got[msgStr(m["text"])] = true
		if m["delivery"] != "queue" || m["thread"] != "build" {
			t.Fatalf("coalesced message %v", m)
		}
		if m["text"] == "build 5/5" && time.Since(last) < msgReplaceWindow {
			t.Fatalf("build 5/5 delivered %s after its send, before the coalescing window", time.Since(last))
		}
	}
	if !got["build 5/5"] || !got["other sender"] {
		t.Fatalf("delivered %v, want build 5/5 and other sender", got)
	}
	h.OK("send", "rcv", "marker")
	msgExpect(t, r, "marker") // builds 1-4 are gone for good
}

const msgReplaceWindow = 1500 * time.Millisecond

// TestMsgAskAnswered: ask waits for the reply and prints it; pending lists
// the obligation until it is answered; the reply goes to the waiting ask,
// not to the asker's holder.
func TestMsgAskAnswered(t *testing.T) {
	t.Parallel()
	h := newMsgH(t)
	a, aev := h.Attach("--name", "alice")
	b, bev := h.Attach("--name", "bob")
	ask := h.Start("--session", "bob", "ask", "alice", "what", "is", "6*7?")
	m := msgExpect(t, a, "what is 6*7?")
	if m["expects_reply"] != true || msgSub(m, "from")["id"] != bev["id"] || msgSub(m, "from")["name"] != "bob" {
		t.Fatalf("ask as delivered: %v", m)
	}
	var pend struct {
		Asks []map[string]any `json:"asks"`
	}
	h.JSON(&pend, "--session", "alice", "pending")
	if len(pend.Asks) != 1 {
		t.Fatalf("pending: %v", pend.Asks)
	}
	pa := pend.Asks[0]
	if pa["reply_to"] != m["id"] || msgSub(pa, "from")["name"] != "bob" || pa["text"] != "what is 6*7?" ||
		!strings.Contains(msgStr(pa["reply_command"]), "reply --to "+msgStr(m["id"])) {
		t.Fatalf("pending ask %v", pa)
	}
	if _, ok := pa["age_seconds"]; !ok {
		t.Fatalf("pending ask lacks age: %v", pa)
	}
	if out := h.OK("--session", "alice", "pending"); !strings.Contains(out, msgStr(m["id"])) || !strings.Contains(out, "bob") {
		t.Fatalf("pending (human) %q", out)
	}
	h.OK("--session", "alice", "reply", "42")
	out, code := msgExit(t, ask)
	if code != 0 || !strings.Contains(out, "Reply from alice") || !strings.Contains(out, "42") {
		t.Fatalf("ask: exit %d, stdout %q, stderr %q", code, out, ask.Stderr())
	}
	h.JSON(&pend, "--session", "alice", "pending")
	if len(pend.Asks) != 0 {
		t.Fatalf("pending after reply: %v", pend.Asks)
	}
	h.OK("send", "bob", "marker")
	msgExpect(t, b, "marker") // the reply was not also pushed to bob's holder

	// --json: ok, and the reply in the message shape.
	ask = h.Start("--json", "ask", "alice", "again?")
	m = msgExpect(t, a, "again?")
	h.OK("--session", "alice", "reply", "--to", msgStr(m["id"]), "yes")
	out, code = msgExit(t, ask)
	var res struct {
		OK    bool           `json:"ok"`
		AskID string         `json:"ask_id"`
		Reply map[string]any `json:"reply"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || !res.OK || res.AskID != m["id"] ||
		res.Reply["text"] != "yes" || res.Reply["reply_to"] != m["id"] || msgSub(res.Reply, "from")["id"] != aev["id"] {
		t.Fatalf("ask --json: exit %d, %q", code, out)
	}
}

// TestMsgAskTimeout: nobody answers → exit 1 with the timeout reason, and the
// obligation retires.
func TestMsgAskTimeout(t *testing.T) {
	t.Parallel()
	h := newMsgH(t)
	a, _ := h.Attach("--name", "alice")
	start := time.Now()
	msgFails(t, h, 1, []string{"timeout", "No reply"}, "ask", "alice", "anyone?", "--timeout", "1s")
	if d := time.Since(start); d < time.Second {
		t.Fatalf("ask --timeout 1s gave up after %s", d)
	}
	msgExpect(t, a, "anyone?")
	Eventually(t, msgWait, func() bool {
		var pend struct {
			Asks []any `json:"asks"`
		}
		h.JSON(&pend, "--session", "alice", "pending")
		return len(pend.Asks) == 0
	}, "the timed-out ask to leave pending")
	msgFails(t, h, 1, []string{"No active intercom context"}, "--session", "alice", "reply", "late")
}

// TestMsgAskPeerDisconnect: the asked session dies while the ask waits and
// does not come back within the resume grace (askResumeGraceMs) → the ask
// exits 1 saying the peer disconnected, long before its own timeout.
func TestMsgAskPeerDisconnect(t *testing.T) {
	t.Parallel()
	h := newMsgH(t)
	h.WriteConfig(`{"idleExitMs": 0, "askResumeGraceMs": 500}`)
	a, _ := h.Attach("--name", "alice")
	ask := h.Start("ask", "alice", "still there?", "--timeout", "1h")
	msgExpect(t, a, "still there?")
	a.Kill()
	_, code := msgExit(t, ask)
	if code != 1 || !strings.Contains(ask.Stderr(), "disconnected") {
		t.Fatalf("ask after peer death: exit %d, stderr %q", code, ask.Stderr())
	}
}

// TestMsgAskSurvivesPeerRestart: the asked session's holder dies and the
// session is attached again (a harness restarting, as pi -c): the ask is
// pending for it again and its reply reaches the ask, which kept waiting.
func TestMsgAskSurvivesPeerRestart(t *testing.T) {
	t.Parallel()
	h := newMsgH(t)
	a, aev := h.Attach("--name", "alice")
	ask := h.Start("ask", "alice", "are you back?", "--timeout", "10m")
	m := msgExpect(t, a, "are you back?")
	a.Kill()
	h.Attach("--id", msgStr(aev["id"]), "--name", "alice")
	var pend struct {
		Asks []map[string]any `json:"asks"`
	}
	h.JSON(&pend, "--session", "alice", "pending")
	if len(pend.Asks) != 1 || pend.Asks[0]["reply_to"] != m["id"] {
		t.Fatalf("pending of the restarted alice: %v, want ask %v", pend.Asks, m["id"])
	}
	h.OK("--session", "alice", "reply", "back again")
	out, code := msgExit(t, ask)
	if code != 0 || !strings.Contains(out, "back again") {
		t.Fatalf("ask across the peer's restart: exit %d, stdout %q, stderr %q", code, out, ask.Stderr())
	}
}

// TestMsgAskAskerDetached: `--session bob ask` waits while bob's holder
// dies: the ask is withdrawn and the waiting command exits 1 saying why,
// long before its timeout, instead of waiting for it.
func TestMsgAskAskerDetached(t *testing.T) {
	t.Parallel()
	h := newMsgH(t)
	a, _ := h.Attach("--name", "alice")
	b, _ := h.Attach("--name", "bob")
	ask := h.Start("--session", "bob", "--json", "ask", "alice", "need me?", "--timeout", "1h")
	msgExpect(t, a, "need me?")
	b.Kill()
	out, code := msgExit(t, ask)
	var res struct {
		Reason string `json:"reason"`
	}
	if code != 1 || json.Unmarshal([]byte(out), &res) != nil || res.Reason != "asker_disconnected" {
		t.Fatalf("ask whose asking session's holder died: exit %d, stdout %q, stderr %q", code, out, ask.Stderr())
	}
}

// TestMsgAskPeerBusy: a target that does not accept asks gets peer_busy at
// once (the message is still delivered); with --delivery steer the ask
// waits for the answer.
func TestMsgAskPeerBusy(t *testing.T) {
	t.Parallel()
	h := newMsgH(t)
	a, _ := h.Attach("--name", "alice")
	h.OK("--session", "alice", "state", "thinking")
	// "At once": the ask's own timeout (90 s) is past h.Run's 30 s bound,
	// so an ask that waited would be killed instead of exiting 1 with
	// peer_busy.
	msgFails(t, h, 1, []string{"peer_busy"}, "ask", "alice", "busy?", "--timeout", "90s")
	msgExpect(t, a, "busy?")
	r := msgFails(t, h, 1, nil, "--json", "ask", "alice", "busy", "again?")
	var res map[string]any
	if json.Unmarshal([]byte(r.Stdout), &res) != nil || res["ok"] != false || res["reason"] != "peer_busy" {
		t.Fatalf("ask --json to a busy peer: %q", r.Stdout)
	}
	msgExpect(t, a, "busy again?")

	ask := h.Start("ask", "--delivery", "steer", "alice", "urgent?", "--timeout", "60s")
	m := msgExpect(t, a, "urgent?")
	select {
	case <-ask.Done():
		t.Fatalf("ask --delivery steer to a busy peer returned without waiting; stderr %q", ask.Stderr())
	default:
	}
	h.OK("--session", "alice", "reply", "--to", msgStr(m["id"]), "on it")
	out, code := msgExit(t, ask)
	if code != 0 || !strings.Contains(out, "on it") {
		t.Fatalf("ask --delivery steer: exit %d, %q, stderr %q", code, out, ask.Stderr())
	}

	// accepts_asks can be published explicitly while busy.
	h.OK("--session", "alice", "state", "thinking", "--accepts-asks")
	ask = h.Start("ask", "alice", "now?", "--timeout", "60s")
	m = msgExpect(t, a, "now?")
	h.OK("--session", "alice", "reply", "--to", msgStr(m["id"]), "now")
	if out, code := msgExit(t, ask); code != 0 || !strings.Contains(out, "now") {
		t.Fatalf("ask to a busy peer accepting asks: exit %d, %q", code, out)
	}
}

// TestMsgAskPeerOffline: an ask to a disconnected session fails at once with
// peer_offline and leaves nothing in its inbox.
func TestMsgAskPeerOffline(t *testing.T) {
	t.Parallel()
	h := newMsgH(t)
	p, ev := h.Attach("--name", "alice")
	id := msgStr(ev["id"])
	msgDetach(t, h, p, id)
	msgFails(t, h, 1, []string{"peer_offline"}, "ask", "alice", "are you there?")
	h.OK("send", "alice", "marker")
	p2, _ := h.Attach("--resume", id)
	msgExpect(t, p2, "marker")
}

// TestMsgAskSecondConcurrentRefused: one waiting ask per session.
func TestMsgAskSecondConcurrentRefused(t *testing.T) {
	t.Parallel()
	h := newMsgH(t)
	a, _ := h.Attach("--name", "alice")
	h.Attach("--name", "bob")
	ask := h.Start("--session", "bob", "ask", "alice", "first?", "--timeout", "60s")
	msgExpect(t, a, "first?")
	msgFails(t, h, 1, []string{"Already waiting"}, "--session", "bob", "ask", "alice", "second?")
	h.OK("send", "alice", "marker")
	msgExpect(t, a, "marker") // second? was never stored
	h.OK("--session", "alice", "reply", "done")
	if out, code := msgExit(t, ask); code != 0 || !strings.Contains(out, "done") {
		t.Fatalf("first ask: exit %d, %q", code, out)
	}
	// Once answered, bob may ask again.
	ask = h.Start("--session", "bob", "ask", "alice", "third?", "--timeout", "60s")
	msgExpect(t, a, "third?")
	h.OK("--session", "alice", "reply", "ok")
	if out, code := msgExit(t, ask); code != 0 || !strings.Contains(out, "ok") {
		t.Fatalf("third ask: exit %d, %q", code, out)
	}
}

// TestMsgReplyAmbiguity: with two pending asks, reply without --to lists
// both; --to picks; with one left, reply answers it.
func TestMsgReplyAmbiguity(t *testing.T) {
	t.Parallel()
	h := newMsgH(t)
	a, _ := h.Attach("--name", "alice")
	ask1 := h.Start("ask", "alice", "q-one", "--timeout", "60s")
	ask2 := h.Start("ask", "alice", "q-two", "--timeout", "60s")
	ids := map[string]string{}
	for i := 0; i < 2; i++ {
		m := msgNext(t, a)
		ids[msgStr(m["text"])] = msgStr(m["id"])
	}
	if ids["q-one"] == "" || ids["q-two"] == "" {
		t.Fatalf("asks delivered: %v", ids)
	}
	msgFails(t, h, 1, []string{"Multiple pending asks", ids["q-one"], ids["q-two"]}, "--session", "alice", "reply", "x")

	var pend struct {
		Asks []map[string]any `json:"asks"`
	}
	h.JSON(&pend, "--session", "alice", "pending")
	if len(pend.Asks) != 2 {
		t.Fatalf("pending: %v", pend.Asks)
	}
	for _, pa := range pend.Asks {
		rt := msgStr(pa["reply_to"])
		if (rt != ids["q-one"] && rt != ids["q-two"]) || !strings.HasPrefix(msgStr(msgSub(pa, "from")["name"]), "cli-") ||
			msgStr(msgSub(pa, "from")["id"]) == "" || !strings.Contains(msgStr(pa["reply_command"]), "reply --to "+rt) {
			t.Fatalf("pending ask %v", pa)
		}
	}

	h.OK("--session", "alice", "reply", "--to", ids["q-one"], "answer-one")
	if out, code := msgExit(t, ask1); code != 0 || !strings.Contains(out, "answer-one") {
		t.Fatalf("ask1: exit %d, %q", code, out)
	}
	select {
	case <-ask2.Done():
		t.Fatalf("ask2 ended before its answer; stderr %q", ask2.Stderr())
	default:
	}
	h.OK("--session", "alice", "reply", "answer-two")
	if out, code := msgExit(t, ask2); code != 0 || !strings.Contains(out, "answer-two") || strings.Contains(out, "answer-one") {
		t.Fatalf("ask2: exit %d, %q", code, out)
	}
	msgFails(t, h, 1, []string{"No active intercom context"}, "--session", "alice", "reply", "x")
	msgFails(t, h, 1, []string{"no pending ask matches"}, "--session", "alice", "reply", "--to", ids["q-one"], "x")
}

// TestMsgBadInput: oversize messages, bad names, unknown and self targets and
// invalid flag combinations fail with clear errors, store nothing, and leave
// the broker serving.
func TestMsgBadInput(t *testing.T) {
	t.Parallel()
	h := newMsgH(t)
	r, rev := h.Attach("--name", "rcv")
	rid := msgStr(rev["id"])
	pids := h.BrokerPids()

	big := filepath.Join(h.Cwd, "big.txt")
	if err := os.WriteFile(big, []byte(strings.Repeat("x", 1100*1024)), 0o600); err != nil {
		t.Fatal(err)
	}
	msgFails(t, h, 2, []string{"too large", "max 1048576"}, "send", "rcv", "--file", big, "see", "file")
	msgFails(t, h, 2, []string{"too large"}, "ask", "rcv", "--file", big, "see", "file")
	// Exactly 1 MiB is allowed (through stdin).
	if res := h.RunIn(h.Cwd, strings.Repeat("y", wire.MaxMessageBytes), "send", "rcv", "-"); res.Code != 0 {
		t.Fatalf("1 MiB message: exit %d, %s", res.Code, res.Stderr)
	}
	if m := msgNext(t, r); len(msgStr(m["text"])) != wire.MaxMessageBytes {
		t.Fatalf("1 MiB message arrived with %d bytes", len(msgStr(m["text"])))
	}

	// The broker enforces the limit itself for clients that skip the CLI's
	// check, and the connection stays usable.
	c := msgClient(t, h)
	from := msgSender(t, h, c, "raw")
	ctx, cancel := context.WithTimeout(context.Background(), msgWait)
	defer cancel()
	_, err := c.Send(ctx, wire.SendRequest{From: from, To: rid, Text: strings.Repeat("z", wire.MaxMessageBytes+1)})
	if !errors.Is(err, intercom.ErrTooLarge) || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("oversize send through the API: %v, want too_large", err)
	}
	_, err = c.Send(ctx, wire.SendRequest{From: from, To: rid, Text: "x", Attachments: []wire.Attachment{{Type: "context", Name: "big", Content: strings.Repeat("z", wire.MaxMessageBytes)}}})
	if !errors.Is(err, intercom.ErrTooLarge) {
		t.Fatalf("oversize attachment through the API: %v, want too_large", err)
	}
	for _, bad := range []wire.SendRequest{
		{From: from, To: rid, Text: "x", Delivery: wire.DeliveryPassive, ExpectsReply: true},
		{From: from, To: rid, Text: "x", Thread: "t"},
		{From: from, To: rid, Text: "x", Delivery: wire.DeliveryQueue, QueueMode: "replace"},
		{From: from, To: rid, Text: "x", Delivery: wire.DeliverySteer, QueueMode: "replace", Thread: "t"},
		{From: from, To: rid, Text: "x", Delivery: "loud"},
		{From: from, To: rid, Text: "bell\x07"},
		{From: from, To: rid, Text: "  "},
	} {
		if _, err := c.Send(ctx, bad); !errors.Is(err, intercom.ErrBadRequest) {
			t.Fatalf("send %+v through the API: %v, want bad_request", bad, err)
		}
	}
	if _, err := c.Send(ctx, wire.SendRequest{From: from, To: rid, Text: "after-too-large"}); err != nil {
		t.Fatalf("send after rejected ones: %v", err)
	}
	msgExpect(t, r, "after-too-large")

	// Names.
	if res := msgFails(t, h, 2, []string{"invalid session name"}, "attach", "--name", "bad\tname"); strings.Contains(res.Stderr, ": :") {
		t.Fatalf("garbled error: %q", res.Stderr)
	}
	msgFails(t, h, 2, []string{"invalid session name"}, "attach", "--name", strings.Repeat("n", wire.MaxNameLen+1))
	msgFails(t, h, 2, []string{"invalid session id"}, "attach", "--id", "short")
	// Targets.
	msgFails(t, h, 1, []string{"no session matches"}, "send", "nobody-here", "x")
	msgFails(t, h, 1, []string{"no session matches"}, "ask", "nobody-here", "x")
	msgFails(t, h, 1, []string{"Cannot message the current session"}, "--session", "rcv", "send", "rcv", "x")
	msgFails(t, h, 1, []string{"Cannot message the current session"}, "--session", "rcv", "send", rid, "x")
	msgFails(t, h, 2, []string{"too short"}, "send", rid[:4], "x")
	msgFails(t, h, 1, []string{"--session"}, "--session", "ghost", "send", "rcv", "x")
	// Message text and flag combinations.
	msgFails(t, h, 2, []string{"empty"}, "send", "rcv", "")
	msgFails(t, h, 2, []string{"control character"}, "send", "rcv", "bell\x07")
	msgFails(t, h, 2, []string{"--thread is only valid with --queue-mode replace"}, "send", "--thread", "t", "rcv", "x")
	msgFails(t, h, 2, []string{"--queue-mode replace requires --thread"}, "send", "--queue-mode", "replace", "rcv", "x")
	msgFails(t, h, 2, []string{"requires --delivery queue"}, "send", "--delivery", "steer", "--queue-mode", "replace", "--thread", "t", "rcv", "x")
	msgFails(t, h, 2, []string{"passive"}, "ask", "--delivery", "passive", "rcv", "x")
	msgFails(t, h, 2, []string{"delivery"}, "send", "--delivery", "loud", "rcv", "x")
	msgFails(t, h, 2, []string{"--timeout: 0 is not allowed"}, "ask", "--timeout", "0", "rcv", "x")
	msgFails(t, h, 2, []string{"NAME[:LANG]=PATH"}, "send", "--snippet", "nopath", "rcv", "x")
	msgFails(t, h, 2, []string{"NAME=TEXT"}, "send", "--context", "notext", "rcv", "x")
	msgFails(t, h, 2, []string{"--file"}, "send", "--file", filepath.Join(h.Cwd, "missing.txt"), "rcv", "x")

	// Same broker, still serving; nothing above was stored for rcv.
	if now := h.BrokerPids(); len(now) != 1 || now[0] != pids[0] {
		t.Fatalf("broker pids %v, want still %v", now, pids)
	}
	h.OK("send", "rcv", "marker")
	msgExpect(t, r, "marker")
	msgAwaitAcked(t, c, rid)
}

// TestMsgClientIDDedupe: a retried send with the same --client-id is stored
// once, also across a broker crash and also from an anonymous (ephemeral)
// sender.
func TestMsgClientIDDedupe(t *testing.T) {
	t.Parallel()
	h := newMsgH(t)
	r, rev := h.Attach("--name", "rcv")
	rid := msgStr(rev["id"])
	h.Attach("--name", "snd")
	var r1, r2 wire.SendReply
	h.JSON(&r1, "--session", "snd", "send", "--client-id", "k-1", "rcv", "once")
	h.JSON(&r2, "--session", "snd", "send", "--client-id", "k-1", "rcv", "once")
	if r1.Duplicate || !r2.Duplicate || r2.ID != r1.ID {
		t.Fatalf("retry with the same client id: first %+v, second %+v", r1, r2)
	}
	if out := h.OK("--session", "snd", "send", "--client-id", "k-1", "rcv", "once"); !strings.Contains(out, "Already sent") || !strings.Contains(out, r1.ID) {
		t.Fatalf("human output of a duplicate: %q", out)
	}
	// Anonymous CLI sends (an ephemeral sender per call) retried.
	var a1, a2 wire.SendReply
	h.JSON(&a1, "send", "--client-id", "k-anon", "rcv", "anon-once")
	h.JSON(&a2, "send", "--client-id", "k-anon", "rcv", "anon-once")
	if a1.Duplicate || !a2.Duplicate || a2.ID != a1.ID {
		t.Fatalf("anonymous retry with the same client id: first %+v, second %+v", a1, a2)
	}
	// The same key from another sender is a different message.
	var o wire.SendReply
	h.JSON(&o, "--session", "rcv", "send", "--client-id", "k-1", "snd", "other sender")
	if o.Duplicate || o.ID == r1.ID {
		t.Fatalf("same key, other sender: %+v", o)
	}
	msgExpect(t, r, "once")
	msgExpect(t, r, "anon-once")

	// The key is durable: a retry after a broker crash is still a duplicate.
	c := msgClient(t, h)
	var k1 wire.SendReply
	h.JSON(&k1, "--session", "snd", "send", "--client-id", "k-2", "rcv", "crash-once")
	msgExpect(t, r, "crash-once")
	msgAwaitAcked(t, c, rid)
	c.Close()
	h.KillBroker()
	var k2 wire.SendReply
	h.JSON(&k2, "--session", "snd", "send", "--client-id", "k-2", "rcv", "crash-once")
	if !k2.Duplicate || k2.ID != k1.ID {
		t.Fatalf("retry after broker crash: %+v, want duplicate of %s", k2, k1.ID)
	}
	h.OK("send", "rcv", "marker")
	msgExpect(t, r, "marker")
}

// TestMsgAttachments: --file, --snippet and --context arrive with their
// content; attach without --json renders sender, cwd, mode, the reply hint,
// body and attachments.
func TestMsgAttachments(t *testing.T) {
	t.Parallel()
	h := newMsgH(t)
	r, _ := h.Attach("--name", "rcv")
	notes := filepath.Join(h.Cwd, "notes.txt")
	code := filepath.Join(h.Cwd, "main.go")
	plain := filepath.Join(h.Cwd, "plain.sh")
	for p, body := range map[string]string{notes: "file body\n", code: "package main\n", plain: "echo hi\n"} {
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	h.OK("send", "rcv", "--file", notes, "--snippet", "main.go:go="+code, "--snippet", "run="+plain,
		"--context", "ticket=ABC-123 is open", "see", "attached")
	// Content is read at send time.
	if err := os.WriteFile(notes, []byte("changed later\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := msgExpect(t, r, "see attached")
	raw, _ := json.Marshal(m["attachments"])
	var att []wire.Attachment
	if err := json.Unmarshal(raw, &att); err != nil {
		t.Fatal(err)
	}
	want := []wire.Attachment{
		{Type: "file", Name: "notes.txt", Path: notes, Content: "file body\n"},
		{Type: "snippet", Name: "main.go", Language: "go", Path: code, Content: "package main\n"},
		{Type: "snippet", Name: "run", Path: plain, Content: "echo hi\n"},
		{Type: "context", Name: "ticket", Content: "ABC-123 is open"},
	}
	if len(att) != len(want) {
		t.Fatalf("attachments %+v, want %+v", att, want)
	}
	for i := range want {
		if att[i] != want[i] {
			t.Fatalf("attachment %d: %+v, want %+v", i, att[i], want[i])
		}
	}

	// Human rendering of an ask with an attachment.
	hp := h.Start("attach", "--name", "human")
	if l, ok := hp.Line(msgWait); !ok || !strings.HasPrefix(l, "attached as human") {
		t.Fatalf("attach first line %q", l)
	}
	h.Attach("--name", "asker")
	ask := h.Start("--session", "asker", "ask", "human", "--context", "why=because", "please", "review", "--timeout", "60s")
	var lines []string
	for {
		l, ok := hp.Line(msgWait)
		if !ok {
			t.Fatalf("human attach output stopped: %q", lines)
		}
		lines = append(lines, l)
		if strings.HasPrefix(l, "--- end why") {
			break
		}
	}
	text := strings.Join(lines, "\n")
	var pend struct {
		Asks []map[string]any `json:"asks"`
	}
	h.JSON(&pend, "--session", "human", "pending")
	if len(pend.Asks) != 1 {
		t.Fatalf("pending %v", pend.Asks)
	}
	askID := msgStr(pend.Asks[0]["reply_to"])
	for _, w := range []string{" asker** (Native session cwd: " + h.Cwd, "Native session cwd: " + h.Cwd, "steer", askID,
		"To reply: intercom --session human reply --to " + askID, "please review", "--- context: why", "because"} {
		if !strings.Contains(text, w) {
			t.Fatalf("rendered message lacks %q:\n%s", w, text)
		}
	}
	h.OK("--session", "human", "reply", "reviewed", "--context", "note=lgtm")
	if out, code := msgExit(t, ask); code != 0 || !strings.Contains(out, "reviewed") || !strings.Contains(out, "lgtm") {
		t.Fatalf("ask: exit %d, %q", code, out)
	}
}

// TestMsgForget: forget needs --yes without a terminal, refuses connected
// sessions, and removes a disconnected session with its inbox.
func TestMsgForget(t *testing.T) {
	t.Parallel()
	h := newMsgH(t)
	p, ev := h.Attach("--name", "gone")
	id := msgStr(ev["id"])
	h.Attach("--name", "live")
	msgFails(t, h, 2, []string{"connected"}, "forget", "live", "--yes")
	if Row(h.Sessions(), "live") == nil {
		t.Fatal("refused forget removed live")
	}
	msgDetach(t, h, p, id)
	h.OK("send", "gone", "left behind")
	msgFails(t, h, 2, []string{"--yes"}, "forget", "gone")
	if msgRow(t, h, id) == nil {
		t.Fatal("forget without --yes removed the session")
	}
	if out := h.OK("forget", "gone", "--yes"); !strings.Contains(out, id) {
		t.Fatalf("forget printed %q", out)
	}
	if r := msgRow(t, h, id); r != nil {
		t.Fatalf("forgotten session still listed: %v", r)
	}
	msgFails(t, h, 1, []string{"no session matches"}, "send", "gone", "x")
	msgFails(t, h, 1, []string{"no session"}, "attach", "--resume", id)
	// Its inbox went too: a new session with the same id starts empty.
	p2, ev2 := h.Attach("--id", id, "--name", "reborn")
	if ev2["id"] != id {
		t.Fatalf("attach --id %s got %v", id, ev2["id"])
	}
	h.OK("send", "reborn", "marker")
	msgExpect(t, p2, "marker")
}

// TestMsgInbox: a session without a holder fetches (and thereby acks) its
// messages with inbox; --wait holds the session until one arrives.
func TestMsgInbox(t *testing.T) {
	t.Parallel()
	h := newMsgH(t)
	p, ev := h.Attach("--name", "poller")
	id := msgStr(ev["id"])
	msgDetach(t, h, p, id)
	h.OK("send", "poller", "first")
	h.OK("send", "--delivery", "queue", "poller", "second")
	type inbox struct {
		Messages []map[string]any `json:"messages"`
	}
	fetch := func(args ...string) []map[string]any {
		t.Helper()
		var in inbox
		h.JSON(&in, append([]string{"--session", "poller", "inbox"}, args...)...)
		return in.Messages
	}
	got := fetch()
	if len(got) != 2 || got[0]["text"] != "first" || got[1]["text"] != "second" || got[1]["delivery"] != "queue" ||
		msgStr(got[0]["id"]) == "" || msgStr(msgSub(got[0], "from")["name"]) == "" {
		t.Fatalf("inbox: %v", got)
	}
	if got := fetch(); len(got) != 0 {
		t.Fatalf("second inbox call: %v, want nothing (acked)", got)
	}
	h.OK("send", "poller", "third")
	if got := fetch("--peek"); len(got) != 1 || got[0]["text"] != "third" {
		t.Fatalf("inbox --peek: %v", got)
	}
	if got := fetch(); len(got) != 1 || got[0]["text"] != "third" {
		t.Fatalf("inbox after --peek: %v", got)
	}
	if out := h.OK("--session", "poller", "inbox"); !strings.Contains(out, "No messages") {
		t.Fatalf("empty inbox printed %q", out)
	}

	// --wait returns when a message arrives.
	// Nothing there: it waits rather than printing an empty inbox (the
	// broker holds its waiter, and it has printed nothing).
	w := h.Start("--session", "poller", "--json", "inbox", "--wait", "20s")
	msgAwaitWaiters(t, h, 1)
	w.NoneBuffered()
	select {
	case <-w.Done():
		t.Fatalf("inbox --wait returned before anything arrived; stderr %q", w.Stderr())
	default:
	}
	h.OK("send", "poller", "wake up")
	out, code := msgExit(t, w)
	var in inbox
	if err := json.Unmarshal([]byte(out), &in); code != 0 || err != nil || len(in.Messages) != 1 || in.Messages[0]["text"] != "wake up" {
		t.Fatalf("inbox --wait: exit %d, %q, stderr %q", code, out, w.Stderr())
	}
	if got := fetch(); len(got) != 0 {
		t.Fatalf("inbox after --wait: %v, want nothing (acked)", got)
	}
	// --wait with nothing coming returns empty after the wait.
	start := time.Now()
	if got := fetch("--wait", "1s"); len(got) != 0 || time.Since(start) < time.Second {
		t.Fatalf("inbox --wait 1s: %v after %s", got, time.Since(start))
	}
	msgFails(t, h, 2, []string{"--session"}, "inbox")
}

// TestMsgConcurrentSenders: 20 senders × 500 messages to one attached
// recipient: all 10,000 delivered exactly once, each sender's in order, and
// all acked.
func TestMsgConcurrentSenders(t *testing.T) {
	t.Parallel()
	const senders, per = 20, 500
	h := newMsgH(t)
	rc := msgClient(t, h)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sink, err := rc.Attach(ctx, intercom.AttachOptions{Name: "sink", Cwd: h.Cwd})
	if err != nil {
		t.Fatal(err)
	}
	sinkID := sink.ID()

	type src struct {
		c    *intercom.Client
		from string
	}
	srcs := make([]src, senders)
	for k := range srcs {
		c := msgClient(t, h)
		srcs[k] = src{c, msgSender(t, h, c, fmt.Sprintf("src-%02d", k))}
	}

	// Receiver: checks each message, hands ids to a batching acker.
	acks := make(chan string, senders*per)
	recvErr := make(chan error, 1)
	go func() {
		next := make([]int, senders)
		seen := map[string]bool{}
		for n := 0; n < senders*per; n++ {
			var m wire.Message
			select {
			case m = <-sink.Messages():
			case <-ctx.Done():
				recvErr <- fmt.Errorf("received %d of %d messages: %v", n, senders*per, ctx.Err())
				return
			}
			if seen[m.ID] {
				recvErr <- fmt.Errorf("message %s (%q) delivered twice", m.ID, m.Text)
				return
			}
			seen[m.ID] = true
			var k, i int
			if _, err := fmt.Sscanf(m.Text, "%d:%d", &k, &i); err != nil || k < 0 || k >= senders {
				recvErr <- fmt.Errorf("unexpected message %q", m.Text)
				return
			}
			if i != next[k] {
				recvErr <- fmt.Errorf("sender %d: got message %d, want %d (order or duplicate)", k, i, next[k])
				return
			}
			if m.From.ID != srcs[k].from {
				recvErr <- fmt.Errorf("message %q from %s, want %s", m.Text, m.From.ID, srcs[k].from)
				return
			}
			next[k]++
			acks <- m.ID
		}
		close(acks)
		recvErr <- nil
	}()
	ackErr := make(chan error, 1)
	go func() {
		for id := range acks {
			batch := []string{id}
		more:
			for len(batch) < 1000 {
				select {
				case id, ok := <-acks:
					if !ok {
						break more
					}
					batch = append(batch, id)
				default:
					break more
				}
			}
			if err := sink.Ack(ctx, batch...); err != nil {
				ackErr <- err
				return
			}
		}
		ackErr <- nil
	}()

	var wg sync.WaitGroup
	sendErrs := make(chan error, senders)
	for k := range srcs {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				if _, err := srcs[k].c.Send(ctx, wire.SendRequest{From: srcs[k].from, To: sinkID, Text: fmt.Sprintf("%d:%d", k, i)}); err != nil {
					sendErrs <- fmt.Errorf("sender %d message %d: %w", k, i, err)
					return
				}
			}
		}(k)
	}
	AwaitGroup(t, &wg, 2*time.Minute, "the %d senders to finish", senders)
	close(sendErrs)
	for err := range sendErrs {
		t.Fatal(err)
	}
	if err := <-recvErr; err != nil {
		t.Fatal(err)
	}
	if err := <-ackErr; err != nil {
		t.Fatal(err)
	}
	// Everything acked: nothing left stored, and nothing more arrives: a
	// marker sent now is the next message.
	msgAwaitAcked(t, rc, sinkID)
	if _, err := srcs[0].c.Send(ctx, wire.SendRequest{From: srcs[0].from, To: sinkID, Text: "marker"}); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-sink.Messages():
		if m.Text != "marker" {
			t.Fatalf("extra message after all 10,000: %q", m.Text)
		}
	case <-time.After(msgWait):
		t.Fatalf("the marker did not arrive within %s", msgWait)
	}
}

// TestMsgClientIDRetryInFlight: two sends with one client id racing each
// other (a retry issued while the first is still being committed) give one
// stored message and one id; the "duplicate" answer comes only once the
// first is on disk, so a kill -9 right after both answers loses nothing.
func TestMsgClientIDRetryInFlight(t *testing.T) {
	t.Parallel()
	h := newMsgH(t)
	c := msgClient(t, h)
	ctx, cancel := context.WithTimeout(context.Background(), 3*msgWait)
	defer cancel()
	rcv, err := c.Attach(ctx, intercom.AttachOptions{Name: "rcv", Cwd: h.Cwd})
	if err != nil {
		t.Fatal(err)
	}
	rid := rcv.ID()
	if err := rcv.Detach(ctx); err != nil { // an offline mailbox keeps everything stored
		t.Fatal(err)
	}
	snd, err := c.Attach(ctx, intercom.AttachOptions{Name: "snd", Cwd: h.Cwd, NoDeliver: true})
	if err != nil {
		t.Fatal(err)
	}
	const pairs = 10
	answered := map[string]bool{}
	for round := range 3 {
		var wg sync.WaitGroup
		var res [pairs][2]wire.SendReply
		var errs [pairs][2]error
		for i := range pairs {
			for j := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res[i][j], errs[i][j] = c.Send(ctx, wire.SendRequest{From: snd.ID(), To: rid,
						Text: fmt.Sprintf("r%d-%d", round, i), ClientMsgID: fmt.Sprintf("r%d-%d", round, i)})
				}()
			}
		}
		AwaitGroup(t, &wg, 2*time.Minute, "round %d's %d sends to return", round, 2*pairs)
		for i := range pairs {
			a, b := res[i][0], res[i][1]
			if errs[i][0] != nil || errs[i][1] != nil {
				t.Fatalf("round %d pair %d: %v / %v", round, i, errs[i][0], errs[i][1])
			}
			if a.ID != b.ID || a.Duplicate == b.Duplicate {
				t.Fatalf("round %d pair %d: answers %+v and %+v, want one id, one of them a duplicate", round, i, a, b)
			}
			answered[a.ID] = true
		}
		h.KillBroker() // at once: every answered send must already be on disk
		var stored []wire.Message
		for deadline := time.Now().Add(msgWait); ; time.Sleep(50 * time.Millisecond) {
			cctx, ccancel := context.WithTimeout(ctx, 2*time.Second) // a request the killed broker took is never answered
			stored, err = c.Inbox(cctx, rid, 0)
			ccancel()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("inbox after broker restart (round %d): %v", round, err)
			}
		}
		got := map[string]bool{}
		for _, m := range stored {
			if got[m.ID] {
				t.Fatalf("message %s stored twice", m.ID)
			}
			got[m.ID] = true
		}
		for id := range answered {
			if !got[id] {
				t.Fatalf("round %d: answered message %s lost in the crash (%d stored, %d answered)", round, id, len(got), len(answered))
			}
		}
		if len(got) != len(answered) {
			t.Fatalf("round %d: %d stored, %d answered", round, len(got), len(answered))
		}
	}
}

// TestMsgListQueued: list rows count each session's stored, unacknowledged
// messages ("queued"): two sent to an offline session show as 2, and 0 once
// its resumed holder has them acked.
func TestMsgListQueued(t *testing.T) {
	t.Parallel()
	h := newMsgH(t)
	p, ev := h.Attach("--name", "rcv")
	id := msgStr(ev["id"])
	msgDetach(t, h, p, id)
	h.OK("send", "rcv", "one")
	h.OK("send", "rcv", "two")
	if q := msgRow(t, h, id)["queued"]; q != float64(2) {
		t.Fatalf("queued of an offline session with two messages: %v, want 2", q)
	}
	p2, _ := h.Attach("--resume", id)
	msgExpect(t, p2, "one")
	msgExpect(t, p2, "two")
	msgAwaitAcked(t, msgClient(t, h), id)
	if q := msgRow(t, h, id)["queued"]; q != float64(0) {
		t.Fatalf("queued after delivery and ack: %v, want 0", q)
	}
}
