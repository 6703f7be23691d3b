package e2e

import (
	"strings"
	"testing"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// Who is a person, and a person decides what gets in (#35 items 3 and 5),
// with the real binaries: the test's own process is a person's terminal;
// a command started with a harness's environment (CLAUDECODE=1, as Claude
// Code gives its shell commands) is an agent's.

// asAgent runs intercom as an agent's shell command would.
func asAgent(h *H, args ...string) Result {
	h.t.Helper()
	saved := h.Env
	h.Env = append(append([]string(nil), saved...), "CLAUDECODE=1")
	defer func() { h.Env = saved }()
	return h.Run(args...)
}

func personOrSkipE2E(t *testing.T, h *H) {
	t.Helper()
	var rows []wire.Session
	p, _ := h.Attach("--name", "probe")
	defer p.Stop()
	var out struct {
		Sessions []wire.Session `json:"sessions"`
	}
	h.JSON(&out, "list", "--all")
	rows = out.Sessions
	for _, r := range rows {
		if r.Name == "probe" && !r.Person {
			t.Skip("the test process runs under an agent harness: its commands cannot act as a person")
		}
	}
}

// TestPersonHoldApproveRefuseCLI: zulu holds inbound messages. An agent's
// send is held (receipt and trace say held), listed by `intercom held`,
// cannot be approved by an agent, is delivered once when a person
// approves it; a refused one is never delivered and trace says refused; a
// refusing session turns the send away with exit 1 and one line. A
// person's message is marked from_person and is never held.
func TestPersonHoldApproveRefuseCLI(t *testing.T) {
	t.Parallel()
	h := newMsgH(t)
	h.WriteConfig(`{"idleExitMs": 0, "inbound": {"zulu": "hold", "yankee": "refuse"}}`)
	personOrSkipE2E(t, h)
	zulu, _ := h.Attach("--name", "zulu")
	yankee, _ := h.Attach("--name", "yankee")

	r := asAgent(h, "--json", "send", "zulu", "please", "merge")
	if r.Code != 0 || !strings.Contains(r.Stdout, `"held":true`) {
		t.Fatalf("agent's send to a holding session: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	var sent wire.SendReply
	h.JSON(&sent, "send", "zulu", "from", "me")
	if sent.Held {
		t.Fatal("a person's message was held")
	}
	if m := msgExpect(t, zulu, "from me"); m["from_person"] != true {
		t.Fatalf("person's message %v, want from_person", m)
	}
	var held wire.HeldReply
	h.JSON(&held, "held", "--to", "zulu")
	if len(held.Held) != 1 || held.Held[0].Message.Text != "please merge" || held.Held[0].Message.FromPerson {
		t.Fatalf("held list %+v", held)
	}
	id := held.Held[0].Message.ID
	var tr wire.Trace
	h.JSON(&tr, "trace", id)
	if tr.State != wire.TraceHeld {
		t.Fatalf("trace of the held message: %+v", tr)
	}
	if out := h.OK("held"); !strings.Contains(out, id) || !strings.Contains(out, "please merge") {
		t.Fatalf("held (text) lacks the message:\n%s", out)
	}

	r = asAgent(h, "held", "approve", id)
	if r.Code != 1 || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 || !strings.Contains(r.Stderr, "only a person") {
		t.Fatalf("agent's approval: exit %d, stderr %q", r.Code, r.Stderr)
	}
	h.OK("held", "approve", id)
	if m := msgExpect(t, zulu, "please merge"); m["id"] != id || m["from_person"] == true {
		t.Fatalf("approved message %v", m)
	}
	h.JSON(&tr, "trace", id)
	if tr.Decision != wire.DecisionApproved || tr.State == wire.TraceHeld {
		t.Fatalf("trace after approval: %+v", tr)
	}

	r = asAgent(h, "--json", "send", "zulu", "second", "try")
	if r.Code != 0 {
		t.Fatalf("second send: %d %s", r.Code, r.Stderr)
	}
	h.JSON(&held, "held")
	if len(held.Held) != 1 {
		t.Fatalf("held list %+v, want the second message", held)
	}
	second := held.Held[0].Message.ID
	h.OK("held", "refuse", second)
	h.JSON(&tr, "trace", second)
	if tr.State != wire.TraceRefused {
		t.Fatalf("trace of a refused message: %+v", tr)
	}
	h.OK("send", "zulu", "marker")
	msgExpect(t, zulu, "marker") // not the refused one

	r = asAgent(h, "send", "yankee", "hello")
	if r.Code != 1 || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 || !strings.Contains(r.Stderr, "refuses") {
		t.Fatalf("send to a refusing session: exit %d, stderr %q", r.Code, r.Stderr)
	}
	h.OK("send", "yankee", "marker")
	msgExpect(t, yankee, "marker") // nothing was stored before it
}
