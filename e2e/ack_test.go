//go:build linux

package e2e

// Fault tests of issue 20: an ack that did not reach the broker (it was
// frozen, then killed, between a message being shown and its ack) is
// retried by the holder that showed the message, first thing after the
// reconnect; the message is never shown twice by that holder, is not left
// queued, and its trace keeps the push from before the kill.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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

// ackHolder connects an in-process client holding session "held" and an
// ephemeral sender session on it.
func ackHolder(t *testing.T, h *H) (*intercom.Client, *intercom.Session, string) {
	t.Helper()
	c := msgClient(t, h)
	ctx, cancel := context.WithTimeout(context.Background(), msgWait)
	defer cancel()
	held, err := c.Attach(ctx, intercom.AttachOptions{Name: "held", Cwd: h.Cwd})
	if err != nil {
		t.Fatal(err)
	}
	return c, held, msgSender(t, h, c, "src")
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
	c, held, src := ackHolder(t, h)
	ctx, cancel := context.WithTimeout(context.Background(), 3*msgWait)
	defer cancel()
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

// pipedProc is a CLI process whose stdout the test reads only when it
// asks for a line: while unread, a long line blocks the process in its
// write (a pipe holds 64 KiB), i.e. after it started showing a message and
// before it could ack it.
type pipedProc struct {
	t     *testing.T
	cmd   *exec.Cmd
	pipe  *os.File
	out   *bufio.Reader
	errb  *syncBuf
	lines chan string
	done  chan struct{}
}

func startPiped(t *testing.T, h *H, args ...string) *pipedProc {
	t.Helper()
	cmd := h.cmd(context.Background(), "intercom", args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &pipedProc{t: t, cmd: cmd, pipe: stdout.(*os.File), out: bufio.NewReaderSize(stdout, 4<<20), errb: &syncBuf{b: &bytes.Buffer{}},
		lines: make(chan string), done: make(chan struct{})}
	cmd.Stderr = p.errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		go func() { _, _ = io.Copy(io.Discard, p.out) }()
		<-p.done
	})
	return p
}

// awaitWriting waits until the process has written into its stdout pipe
// more than the test has read: it got what it prints and is printing it
// (blocked, if the line is longer than the pipe holds).
func (p *pipedProc) awaitWriting() {
	p.t.Helper()
	Eventually(p.t, msgWait, func() bool {
		n, err := unix.IoctlGetInt(int(p.pipe.Fd()), unix.TIOCINQ) // FIONREAD: bytes waiting in the pipe
		return err == nil && n > 0 && p.out.Buffered() == 0
	}, "%v to print", p.cmd.Args)
}

func (p *pipedProc) stderr() string {
	p.errb.mu.Lock()
	defer p.errb.mu.Unlock()
	return p.errb.b.String()
}

// event reads the next stdout line (now, not before) as JSON.
func (p *pipedProc) event() map[string]any {
	p.t.Helper()
	got := make(chan string, 1)
	go func() {
		l, _ := p.out.ReadString('\n')
		got <- l
	}()
	select {
	case l := <-got:
		var ev map[string]any
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			p.t.Fatalf("not JSON from %v: %q; stderr: %s", p.cmd.Args, tail(l, 1), p.stderr())
		}
		return ev
	case <-time.After(msgWait):
		p.t.Fatalf("no line within %s from %v; stderr: %s", msgWait, p.cmd.Args, p.stderr())
		return nil
	}
}

// TestFaultAttachLostAckRetried: the scenario with the real CLI.
// `attach --json` is showing a message (blocked writing it) when the broker
// is frozen; its ack times out; the broker is killed. After the reconnect
// the message is acked (no longer queued, `inbox --peek` empty), attach
// never prints it again, and its trace kept the push from before the kill.
func TestFaultAttachLostAckRetried(t *testing.T) {
	t.Parallel()
	h := newMsgH(t)
	h.WriteConfig(`{"idleExitMs": 0, "sendTimeoutMs": 1000}`)
	p := startPiped(t, h, "attach", "--json", "--name", "rcv")
	ev := p.event()
	id := msgStr(ev["id"])
	if ev["event"] != "attached" || id == "" || ev["resumed"] != false {
		t.Fatalf("first event %v, want attached, not resumed", ev)
	}
	c := msgClient(t, h)
	src := msgSender(t, h, c, "src")
	ctx, cancel := context.WithTimeout(context.Background(), 3*msgWait)
	defer cancel()
	big := "big " + strings.Repeat("x", 300<<10) // well over a pipe's 64 KiB
	sent, err := c.Send(ctx, wire.SendRequest{From: src, To: id, Text: big})
	if err != nil {
		t.Fatal(err)
	}
	// Attach got it and is stuck printing it: it has not acked.
	p.awaitWriting()
	awaitTraceStored(t, c)
	freezeBroker(t, h)
	killedAt := time.Now()
	if m := p.event(); m["event"] != "message" || m["id"] != sent.ID {
		t.Fatalf("attach printed %v, want message %s", m["event"], sent.ID)
	}
	Eventually(t, msgWait, func() bool { return strings.Contains(p.stderr(), "ack not confirmed yet") },
		"attach to report its ack as not confirmed")
	h.KillBroker()
	if r := p.event(); r["event"] != "reconnected" {
		t.Fatalf("after the kill attach printed %v, want reconnected", r)
	}
	// The reconnect acked it before re-registering: nothing queued now.
	var in struct {
		Messages []map[string]any `json:"messages"`
	}
	h.JSON(&in, "--session", "rcv", "inbox", "--peek")
	if len(in.Messages) != 0 {
		t.Fatalf("inbox --peek after the reconnect: %d messages, want none", len(in.Messages))
	}
	if q := msgRow(t, h, id)["queued"]; q != float64(0) {
		t.Fatalf("queued after the reconnect: %v, want 0", q)
	}
	var tr wire.Trace
	h.JSON(&tr, "trace", sent.ID)
	if tr.State != "acked" || len(tr.Pushed) != 1 || !tr.Pushed[0].Before(killedAt) || len(tr.Fetched) != 0 {
		t.Fatalf("trace: state %s, pushed %v, fetched %v; want acked, pushed once before the kill (%s), no fetch",
			tr.State, tr.Pushed, tr.Fetched, killedAt.UTC())
	}
	// Never printed again: the next line is the marker.
	if _, err := c.Send(ctx, wire.SendRequest{From: src, To: id, Text: "marker"}); err != nil {
		t.Fatal(err)
	}
	if m := p.event(); m["text"] != "marker" {
		t.Fatalf("attach printed %v (%v) after the reconnect, want the marker", m["event"], m["id"])
	}
}

// TestFaultAckRetriedWithoutReconnect: an ack that timed out against a
// frozen broker that then resumes (no reconnect happens) is retried on the
// session's timer until the broker confirms it.
func TestFaultAckRetriedWithoutReconnect(t *testing.T) {
	t.Parallel()
	h := newMsgH(t)
	c, held, src := ackHolder(t, h)
	ctx, cancel := context.WithTimeout(context.Background(), 3*msgWait)
	defer cancel()
	if _, err := c.Send(ctx, wire.SendRequest{From: src, To: held.ID(), Text: "m"}); err != nil {
		t.Fatal(err)
	}
	m := <-held.Messages()
	pid := freezeBroker(t, h)
	actx, acancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err := held.Ack(actx, m.ID)
	acancel()
	if err == nil {
		t.Fatal("a frozen broker confirmed an ack")
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	Eventually(t, msgWait, func() bool { return held.PendingAcks() == 0 }, "the ack to be confirmed by a retry")
	if msgs, err := c.Peek(ctx, held.ID(), 0); err != nil || len(msgs) != 0 {
		t.Fatalf("inbox after the retried ack: %v (%v), want nothing", msgs, err)
	}
}

// TestMsgAttachIDTakesOverOrFails: `attach --id X` and `--resume X` both
// take over session X or fail clearly (exit 1, naming it) while another
// holder of X runs, never creating a second session; `resumed` is the
// broker's view. Only for an unknown X they differ: --id creates it.
func TestMsgAttachIDTakesOverOrFails(t *testing.T) {
	t.Parallel()
	h := newMsgH(t)
	p, ev := h.Attach("--name", "one")
	id := msgStr(ev["id"])
	if ev["resumed"] != false {
		t.Fatalf("a new session says resumed=%v", ev["resumed"])
	}
	for _, flag := range []string{"--id", "--resume"} {
		msgFails(t, h, 1, []string{"held by another running holder", id}, "attach", flag, id)
	}
	n := 0
	for _, r := range h.Sessions("--scope", "all", "--all") {
		if r["name"] == "one" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d sessions named one after refused take-overs, want 1", n)
	}
	msgDetach(t, h, p, id)
	h.OK("send", "one", "waiting")
	for _, flag := range []string{"--id", "--resume"} {
		p2, ev2 := h.Attach(flag, id)
		if ev2["id"] != id || ev2["resumed"] != true {
			t.Fatalf("attach %s %s: %v, want that session, resumed", flag, id, ev2)
		}
		if flag == "--id" {
			msgExpect(t, p2, "waiting")
			msgAwaitAcked(t, msgClient(t, h), id)
		}
		msgDetach(t, h, p2, id)
	}
	fresh := "fresh-session-0001"
	msgFails(t, h, 1, []string{"no session"}, "attach", "--resume", fresh)
	if _, ev3 := h.Attach("--id", fresh); ev3["id"] != fresh || ev3["resumed"] != false {
		t.Fatalf("attach --id of an unknown id: %v, want it created, not resumed", ev3)
	}
	msgFails(t, h, 2, []string{"--resume cannot be combined with --id"}, "attach", "--id", id, "--resume", id)
}

// TestMsgPeekIsNotFetch: `inbox --peek` and `status` show what waits
// without it counting as a fetch in the trace; a real fetch is recorded once
// and survives a broker restart, as does a push.
func TestMsgPeekIsNotFetch(t *testing.T) {
	t.Parallel()
	h := newMsgH(t)
	p, ev := h.Attach("--name", "poller")
	id := msgStr(ev["id"])
	msgDetach(t, h, p, id)
	var sent wire.SendReply
	h.JSON(&sent, "send", "poller", "look, do not touch")
	mid := sent.ID
	var in struct {
		Messages []map[string]any `json:"messages"`
	}
	for range 2 {
		h.JSON(&in, "--session", "poller", "inbox", "--peek")
		if len(in.Messages) != 1 {
			t.Fatalf("inbox --peek: %v, want the one message", in.Messages)
		}
	}
	var st struct {
		Queued int `json:"queued_inbound"`
	}
	h.JSON(&st, "--session", "poller", "status")
	if st.Queued != 1 {
		t.Fatalf("status queued_inbound %d, want 1", st.Queued)
	}
	var tr wire.Trace
	h.JSON(&tr, "trace", mid)
	if tr.State != "stored" || len(tr.Fetched) != 0 {
		t.Fatalf("trace after peeks: %s, fetched %v; want stored, no fetch", tr.State, tr.Fetched)
	}
	// A fetch without ack (the broker dies before it) is kept across the restart.
	c := msgClient(t, h)
	ctx, cancel := context.WithTimeout(context.Background(), msgWait)
	defer cancel()
	if msgs, err := c.Inbox(ctx, id, 0); err != nil || len(msgs) != 1 {
		t.Fatalf("fetch: %v (%v)", msgs, err)
	}
	awaitTraceStored(t, c)
	h.KillBroker()
	h.JSON(&tr, "trace", mid)
	if tr.State != "fetched" || len(tr.Fetched) != 1 {
		t.Fatalf("trace after a fetch and a broker restart: %s, fetched %v; want fetched once", tr.State, tr.Fetched)
	}
	h.JSON(&in, "--session", "poller", "inbox")
	h.JSON(&tr, "trace", mid)
	if tr.State != "acked" || len(tr.Fetched) != 2 {
		t.Fatalf("trace after inbox: %s, fetched %v; want acked, fetched twice (before and after the restart)", tr.State, tr.Fetched)
	}
}

// TestFaultFetchedAckJournaled: a process that fetched and showed messages
// (`intercom wait`, like a harness hook) and whose ack the broker never
// confirmed leaves that ack for the session's other processes: the next
// fetch acks the message instead of showing it again, and the session's
// holder (`intercom hold`, what hooks start) retries it by itself.
func TestFaultFetchedAckJournaled(t *testing.T) {
	t.Parallel()
	h := newMsgH(t)
	h.WriteConfig(`{"idleExitMs": 0, "sendTimeoutMs": 500}`)
	c := msgClient(t, h)
	src := msgSender(t, h, c, "src")
	ctx, cancel := context.WithTimeout(context.Background(), 3*msgWait)
	defer cancel()
	const sid = "hooked-session-01"

	// showOnce sends a big message, lets `wait --json` fetch it and start
	// printing it, freezes the broker, lets wait finish (its ack cannot be
	// confirmed) and kills the broker.
	showOnce := func(text string) string {
		t.Helper()
		sent, err := c.Send(ctx, wire.SendRequest{From: src, To: sid, Text: text + " " + strings.Repeat("y", 300<<10)})
		if err != nil {
			t.Fatal(err)
		}
		w := startPiped(t, h, "--session", sid, "--json", "wait", "--timeout", "1m")
		w.awaitWriting() // fetched, printing, not acked
		awaitTraceStored(t, c)
		freezeBroker(t, h)
		var out struct {
			Messages []map[string]any `json:"messages"`
		}
		if ev := w.event(); json.Unmarshal(mustJSON(t, ev), &out) != nil || len(out.Messages) != 1 || out.Messages[0]["id"] != sent.ID {
			t.Fatalf("wait printed %v, want message %s", ev, sent.ID)
		}
		select {
		case <-w.done:
		case <-time.After(msgWait):
			t.Fatalf("wait did not exit; stderr: %s", w.stderr())
		}
		if code := w.cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(w.stderr(), "ack not confirmed") {
			t.Fatalf("wait exit %d, stderr %q; want 2 (woken) and the unconfirmed ack reported", code, w.stderr())
		}
		h.KillBroker()
		return sent.ID
	}

	// 1. No holder: the next fetch acks the shown message instead of showing it.
	p, ev := h.Attach("--id", sid, "--name", "hooked")
	if ev["id"] != sid {
		t.Fatalf("attach --id %s: %v", sid, ev)
	}
	msgDetach(t, h, p, sid)
	first := showOnce("first")
	var in struct {
		Messages []map[string]any `json:"messages"`
	}
	h.JSON(&in, "--session", sid, "inbox")
	if len(in.Messages) != 0 {
		t.Fatalf("the next fetch showed %v again, want nothing", in.Messages[0]["id"])
	}
	if q := msgRow(t, h, sid)["queued"]; q != float64(0) {
		t.Fatalf("queued after the next fetch: %v, want 0", q)
	}
	var tr wire.Trace
	h.JSON(&tr, "trace", first)
	if tr.State != "acked" || len(tr.Fetched) != 1 {
		t.Fatalf("trace of the first: %s, fetched %v; want acked, fetched once", tr.State, tr.Fetched)
	}

	// 2. The session's holder retries the journaled ack: queued drops to 0
	// without any fetch (list counts on the broker's side).
	hold := h.Start("hold", "--id", sid, "--name", "hooked")
	if l, ok := hold.Line(msgWait); !ok || !strings.HasPrefix(l, "ready") {
		t.Fatalf("hold: %q; stderr: %s", l, hold.Stderr())
	}
	second := showOnce("second")
	Eventually(t, msgWait, func() bool {
		r := msgRow(t, h, sid)
		return r != nil && r["queued"] == float64(0)
	}, "the holder to ack what wait showed")
	h.JSON(&tr, "trace", second)
	if tr.State != "acked" {
		t.Fatalf("trace of the second: %s, want acked", tr.State)
	}
}
