package pluginhost

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/internal/agentsession"
	"github.com/intercom-dev/intercom/internal/brokertest"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// plugin is the test's side of the JSON lines: what a plugin writes and reads.
type plugin struct {
	t   *testing.T
	in  io.WriteCloser
	out *bufio.Scanner
}

func (p *plugin) op(o Op) {
	p.t.Helper()
	data, _ := json.Marshal(o)
	if _, err := p.in.Write(append(data, '\n')); err != nil {
		p.t.Fatal(err)
	}
}

func (p *plugin) event() Event {
	p.t.Helper()
	if !p.out.Scan() {
		p.t.Fatalf("the host ended: %v", p.out.Err())
	}
	var ev Event
	if err := json.Unmarshal(p.out.Bytes(), &ev); err != nil {
		p.t.Fatalf("not JSON: %q", p.out.Bytes())
	}
	return ev
}

func (p *plugin) expect(kind string) Event {
	p.t.Helper()
	ev := p.event()
	if ev.Event != kind {
		p.t.Fatalf("got %+v, want a %s event", ev, kind)
	}
	return ev
}

// serve starts a Host for a fresh session on an in-process broker and
// returns the plugin's end, the client and the session id.
func serve(t *testing.T) (*plugin, *intercom.Client, string) {
	home := brokertest.Start(t)
	c := brokertest.Connect(t, home)
	ctx, cancel := context.WithCancel(context.Background())
	s, err := c.Attach(ctx, intercom.AttachOptions{RequestID: "oc-ses_test0001", Exact: true, Name: "oc", NoDeliver: true})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := &Host{Client: c, Session: s, Agents: agentsession.Open(home), Render: func(m wire.Message) string { return m.Text + "\n" },
		Intro: "hello", Log: slog.New(slog.DiscardHandler), HandTimeout: time.Minute}
	done := make(chan error, 1)
	go func() { done <- h.Serve(ctx, inR, outW); outW.Close() }()
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("the host did not end when its stdin closed")
		}
		cancel()
	})
	p := &plugin{t: t, in: inW, out: bufio.NewScanner(outR)}
	if ev := p.expect("ready"); ev.Session != s.ID() || ev.Intro != "hello" {
		t.Fatalf("ready %+v", ev)
	}
	return p, c, s.ID()
}

// A waking message is announced; a hand-over the plugin reports failed
// acknowledges nothing (the message is handed over again), and one it
// reports handed acknowledges it.
func TestDeliverAcknowledgesOnlyHandedText(t *testing.T) {
	p, c, sid := serve(t)
	ctx := context.Background()
	peer, err := c.Attach(ctx, intercom.AttachOptions{Name: "peer", NoDeliver: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Send(ctx, wire.SendRequest{From: peer.ID(), To: sid, Text: "MSG-1"}); err != nil {
		t.Fatal(err)
	}
	p.expect("waiting")

	p.op(Op{Op: "deliver", Req: 1, WakeOnly: true})
	if ev := p.expect("deliver"); ev.Req != 1 || !strings.Contains(ev.Text, "MSG-1") {
		t.Fatalf("deliver %+v, want MSG-1", ev)
	}
	p.op(Op{Op: "failed", Req: 1, Error: "session gone"})
	if ev := p.expect("done"); ev.Acked != 0 || ev.Error == "" {
		t.Fatalf("done after failed: %+v, want nothing acknowledged and the error", ev)
	}
	if msgs, _ := c.Peek(ctx, sid, 0); len(msgs) != 1 {
		t.Fatalf("%d messages wait after a failed hand-over, want 1", len(msgs))
	}
	p.expect("waiting") // still waiting: told again

	p.op(Op{Op: "deliver", Req: 2})
	if ev := p.expect("deliver"); ev.Req != 2 || !strings.Contains(ev.Text, "MSG-1") {
		t.Fatalf("deliver %+v, want MSG-1 again", ev)
	}
	p.op(Op{Op: "handed", Req: 2})
	if ev := p.expect("done"); ev.Acked != 1 || ev.Error != "" {
		t.Fatalf("done after handed: %+v, want 1 acknowledged", ev)
	}
	if msgs, _ := c.Peek(ctx, sid, 0); len(msgs) != 0 {
		t.Fatalf("%d messages wait after delivery, want 0", len(msgs))
	}
	// Nothing waits: a delivery writes no text.
	p.op(Op{Op: "deliver", Req: 3})
	if ev := p.expect("done"); ev.Req != 3 || ev.Acked != 0 || ev.Error != "" {
		t.Fatalf("empty delivery: %+v", ev)
	}
}

// State ops reach the broker as the session's status.
func TestStateIsReported(t *testing.T) {
	p, c, sid := serve(t)
	ctx := context.Background()
	p.op(Op{Op: "state", State: "tool:bash"})
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, err := c.Find(ctx, sid)
		if err == nil && s.Status == "tool:bash" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("status %q (err %v), want tool:bash", s.Status, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A plugin that confirms and then goes away (OpenCode exits) still gets
// its hand-over acknowledged: the answer is in its last lines.
func TestHandedThenGoneIsAcknowledged(t *testing.T) {
	p, c, sid := serve(t)
	ctx := context.Background()
	peer, err := c.Attach(ctx, intercom.AttachOptions{Name: "peer", NoDeliver: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Send(ctx, wire.SendRequest{From: peer.ID(), To: sid, Text: "LAST"}); err != nil {
		t.Fatal(err)
	}
	p.expect("waiting")
	p.op(Op{Op: "deliver", Req: 1})
	p.expect("deliver")
	p.op(Op{Op: "handed", Req: 1})
	p.in.Close()
	if ev := p.expect("done"); ev.Acked != 1 {
		t.Fatalf("done %+v, want 1 acknowledged", ev)
	}
	if msgs, _ := c.Peek(ctx, sid, 0); len(msgs) != 0 {
		t.Fatalf("%d messages wait, want 0", len(msgs))
	}
}
