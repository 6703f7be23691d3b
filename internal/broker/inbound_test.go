package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/internal/proctree"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// The tests' own process acts as a person (it runs no harness and has no
// harness's environment); a session is made an agent's the way a harness
// does it, with a binding naming it in INTERCOM_HOME/agents.

// personOrSkip skips a test whose process cannot act as a person: it was
// started by an agent harness (then every connection of it is an agent's).
func personOrSkip(t *testing.T) {
	t.Helper()
	if !personProcess(t.TempDir(), os.Getpid()) {
		t.Skip("the test process runs under an agent harness (its environment or ancestors): it cannot act as a person")
	}
}

// bindAgent makes session s an agent's: a harness binding names it.
func bindAgent(t *testing.T, h *testHome, s *intercom.Session) {
	t.Helper()
	dir := filepath.Join(h.home, "agents")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(map[string]any{"session": s.ID(), "name": s.Info().Name, "pid": 1, "start": 1})
	if err := os.WriteFile(filepath.Join(dir, "binding-"+s.ID()+".json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// inboundWorld is a world whose config.json holds inbound.
func inboundWorld(t *testing.T, inbound string) *world {
	t.Helper()
	h := newHome(t)
	writeInbound(t, h, inbound)
	b := h.start()
	return &world{testHome: h, b: b, c: h.client()}
}

func writeInbound(t *testing.T, h *testHome, inbound string) {
	t.Helper()
	if err := os.MkdirAll(h.home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.layout.ConfigFile(), []byte(`{"inbound":`+inbound+`}`), 0o600); err != nil {
		t.Fatal(err)
	}
}

// stored lists what sid's inbox holds, without fetching it.
func stored(t *testing.T, w *world, sid string) []wire.Message {
	t.Helper()
	res, err := call[wire.InboxReply](t, w.c, wire.SubjInbox, wire.InboxRequest{SessionID: sid, Peek: true})
	if err != nil {
		t.Fatal(err)
	}
	return res.Messages
}

func heldIDs(t *testing.T, w *world, to string) []string {
	t.Helper()
	held, err := w.c.Held(t.Context(), to)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, h := range held {
		ids = append(ids, h.Message.ID)
	}
	return ids
}

func traceState(t *testing.T, w *world, id string) wire.Trace {
	t.Helper()
	tr, err := w.c.Trace(t.Context(), id)
	if err != nil {
		t.Fatalf("trace %s: %v", id, err)
	}
	return tr
}

// TestPersonMarkIsTheBrokers: a message from the person's process carries
// FromPerson, one from an agent's session does not, whatever the request
// says; list shows which session is a person's.
func TestPersonMarkIsTheBrokers(t *testing.T) {
	t.Parallel()
	personOrSkip(t)
	w := newWorld(t)
	me, agent, z := w.attach("me"), w.attach("agent"), w.attach("zulu")
	bindAgent(t, w.testHome, agent)
	w.send(me, "zulu", "from a person")
	if m := recv(t, z); !m.FromPerson || m.Text != "from a person" {
		t.Fatalf("person's message arrived as %+v, want FromPerson", m)
	}
	// The request cannot set the mark: it is no field of a send, and a
	// raw request carrying it is decoded without it.
	raw := fmt.Sprintf(`{"from":%q,"to":"zulu","text":"pretend","from_person":true}`, agent.ID())
	if _, err := intercom.Call[wire.SendReply](t.Context(), w.c, wire.SubjSend, json.RawMessage(raw)); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, z); m.FromPerson || m.Text != "pretend" {
		t.Fatalf("agent's message arrived as %+v, want no FromPerson", m)
	}
	rows, err := w.c.List(t.Context(), intercom.ListOptions{Self: z.ID(), Scope: "all"})
	if err != nil {
		t.Fatal(err)
	}
	person := map[string]bool{}
	for _, r := range rows {
		person[r.Name] = r.Person
	}
	if !person["me"] || person["agent"] {
		t.Fatalf("list person marks %v, want me only", person)
	}
}

// TestAgentEnvironmentIsNoPerson: a process started with a harness's
// environment, or under a bound harness, is an agent's.
func TestAgentEnvironmentIsNoPerson(t *testing.T) {
	t.Parallel()
	personOrSkip(t)
	agents := t.TempDir()
	start := func(env ...string) *exec.Cmd {
		cmd := exec.Command("sleep", "60")
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		// Start returns at the exec's point of no return; the new
		// environment is readable a moment later (empty until then).
		deadline := time.Now().Add(10 * time.Second)
		for {
			env, err := proctree.Environ(cmd.Process.Pid)
			if errors.Is(err, proctree.ErrUnsupported) || slices.Contains(env, "PATH") || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Millisecond)
		}
		return cmd
	}
	if plain := start(); !personProcess(agents, plain.Process.Pid) {
		t.Fatal("a plain terminal process is not a person's")
	}
	for _, v := range []string{"CLAUDECODE=1", "CODEX_THREAD_ID=t1", "GEMINI_CLI=1", "OPENCODE=1", "INTERCOM_SESSION=x"} {
		if p := start(v); personProcess(agents, p.Process.Pid) {
			t.Errorf("a process started with %s counts as a person", v)
		}
	}
	// Under a bound harness: the test process itself is bound here.
	self, err := proctree.Get(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(agents, self.Key()+".json"), []byte(`{"session":"s"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if child := start(); personProcess(agents, child.Process.Pid) {
		t.Fatal("a child of a bound harness counts as a person")
	}
}

// TestInboundHoldApproveDeliversOnce: a held message is not stored for its
// recipient; the sender's receipt and trace say held; a person's approval
// stores and delivers it exactly once; trace then tells it was approved.
func TestInboundHoldApproveDeliversOnce(t *testing.T) {
	t.Parallel()
	personOrSkip(t)
	w := inboundWorld(t, `{"zulu":"hold"}`)
	me, a, z := w.attach("me"), w.attach("alpha"), w.attach("zulu")
	bindAgent(t, w.testHome, a)
	res := w.send(a, "zulu", "please merge")
	if !res.Held {
		t.Fatalf("receipt %+v, want held", res)
	}
	if got := stored(t, w, z.ID()); len(got) != 0 {
		t.Fatalf("held message stored for its recipient: %+v", got)
	}
	if tr := traceState(t, w, res.ID); tr.State != wire.TraceHeld || tr.HeldAt == nil {
		t.Fatalf("trace of a held message %+v", tr)
	}
	if ids := heldIDs(t, w, "zulu"); len(ids) != 1 || ids[0] != res.ID {
		t.Fatalf("held list %v, want [%s]", ids, res.ID)
	}
	// A person's own message is never held.
	w.send(me, "zulu", "from me")
	if m := recv(t, z); m.Text != "from me" {
		t.Fatalf("first delivery %q, want the person's message", m.Text)
	}
	// An agent cannot approve.
	_, err := w.c.DecideHeld(t.Context(), a.ID(), res.ID, true)
	wantCode(t, "approval by an agent", err, wire.CodeRefused)
	for range 2 { // approving twice delivers once
		d, err := w.c.DecideHeld(t.Context(), me.ID(), res.ID, true)
		if err != nil || d.Decision != wire.DecisionApproved {
			t.Fatalf("approve: %+v, %v", d, err)
		}
	}
	if m := recv(t, z); m.ID != res.ID || m.Text != "please merge" {
		t.Fatalf("delivered %+v, want the approved message", m)
	}
	w.send(me, "zulu", "marker")
	if m := recv(t, z); m.Text != "marker" {
		t.Fatalf("after the approved message came %q, want the marker (delivered twice?)", m.Text)
	}
	if ids := heldIDs(t, w, ""); len(ids) != 0 {
		t.Fatalf("held list after approval %v", ids)
	}
	if tr := traceState(t, w, res.ID); tr.Decision != wire.DecisionApproved || tr.HeldAt == nil || tr.State == wire.TraceHeld {
		t.Fatalf("trace after approval %+v", tr)
	}
	// Refusing what was approved is an error, not a change of mind.
	_, err = w.c.DecideHeld(t.Context(), me.ID(), res.ID, false)
	wantCode(t, "refuse after approve", err, wire.CodeBadRequest)
}

// TestInboundRefuseAndExceptions: refuse turns a send away with nothing
// stored; sender exceptions accept or refuse one sender whatever the mode;
// a held message a person refuses is never delivered and trace says so.
func TestInboundRefuseAndExceptions(t *testing.T) {
	t.Parallel()
	personOrSkip(t)
	w := inboundWorld(t, `{"zulu":{"mode":"hold","senders":{"friend":"accept","foe":"refuse"}},"yankee":"refuse"}`)
	me, friend, foe, stranger := w.attach("me"), w.attach("friend"), w.attach("foe"), w.attach("stranger")
	z, y := w.attach("zulu"), w.attach("yankee")
	for _, s := range []*intercom.Session{friend, foe, stranger} {
		bindAgent(t, w.testHome, s)
	}
	_, err := w.c.Send(t.Context(), wire.SendRequest{From: stranger.ID(), To: "yankee", Text: "hi"})
	wantCode(t, "send to a refusing session", err, wire.CodeRefused)
	_, err = w.c.Send(t.Context(), wire.SendRequest{From: foe.ID(), To: "zulu", Text: "hi"})
	wantCode(t, "send from a refused sender", err, wire.CodeRefused)
	if res := w.send(friend, "zulu", "welcome"); res.Held {
		t.Fatal("an accepted sender's message was held")
	}
	if m := recv(t, z); m.Text != "welcome" {
		t.Fatalf("zulu got %q, want the friend's message", m.Text)
	}
	held := w.send(stranger, "zulu", "let me in", func(r *wire.SendRequest) { r.ClientMsgID = "c1" })
	if !held.Held {
		t.Fatal("a stranger's message was not held")
	}
	if d, err := w.c.DecideHeld(t.Context(), me.ID(), held.ID, false); err != nil || d.Decision != wire.DecisionRefused {
		t.Fatalf("refuse: %+v, %v", d, err)
	}
	if tr := traceState(t, w, held.ID); tr.State != wire.TraceRefused || tr.DecidedAt == nil {
		t.Fatalf("trace of a refused message %+v", tr)
	}
	// A retry of the refused send (same client id) is refused again.
	_, err = w.c.Send(t.Context(), wire.SendRequest{From: stranger.ID(), To: "zulu", Text: "let me in", ClientMsgID: "c1"})
	wantCode(t, "retry of a refused message", err, wire.CodeRefused)
	w.send(me, "zulu", "marker")
	w.send(me, "yankee", "marker")
	if m := recv(t, z); m.Text != "marker" {
		t.Fatalf("zulu got %q, want the marker (the refused message delivered?)", m.Text)
	}
	if m := recv(t, y); m.Text != "marker" {
		t.Fatalf("yankee got %q, want the marker", m.Text)
	}
	if got := stored(t, w, y.ID()); len(got) != 1 {
		t.Fatalf("yankee's inbox %+v, want only the marker", got)
	}
}

// TestHeldSurvivesRestart: a held message outlives its broker and is
// delivered when approved on the next one.
func TestHeldSurvivesRestart(t *testing.T) {
	t.Parallel()
	personOrSkip(t)
	h := newHome(t)
	writeInbound(t, h, `{"zulu":"hold"}`)
	b := h.start()
	c := h.client()
	w := &world{testHome: h, b: b, c: c}
	a, z := w.attach("alpha"), w.attach("zulu")
	bindAgent(t, h, a)
	res := w.send(a, "zulu", "kept across restarts")
	zid := z.ID()
	c.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	w = &world{testHome: h, b: h.start(), c: h.client()}
	if ids := heldIDs(t, w, ""); len(ids) != 1 || ids[0] != res.ID {
		t.Fatalf("held after restart %v, want [%s]", ids, res.ID)
	}
	z2, err := w.c.Attach(t.Context(), intercom.AttachOptions{Name: "zulu", ResumeID: zid, Cwd: "/proj"})
	if err != nil {
		t.Fatal(err)
	}
	me := w.attach("me")
	if _, err := w.c.DecideHeld(t.Context(), me.ID(), res.ID, true); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, z2); m.ID != res.ID {
		t.Fatalf("delivered %+v after restart, want the held message", m)
	}
}

// TestBridgedMessagesAreNoPersons: a message from a bridged host never
// carries the person mark, whatever it claims, and is held or refused by
// the recipient's inbound rules like any agent's.
func TestBridgedMessagesAreNoPersons(t *testing.T) {
	t.Parallel()
	w := inboundWorld(t, `{"zulu":"hold","yankee":{"mode":"accept","senders":{"mallory@beta":"refuse"}}}`)
	x, z, _ := w.attach("xray"), w.attach("zulu"), w.attach("yankee")
	deliver := func(id, to string, from wire.Peer) (*wire.SendReply, error) {
		in := wire.Message{ID: id, From: from, To: to, Text: "from beta", Delivery: wire.DeliverySteer, FromPerson: true}
		return call[wire.SendReply](t, w.c, wire.SubjBridgeDeliver, wire.BridgeDeliver{Host: "beta", Message: in})
	}
	if _, err := deliver("r1", "xray", wire.Peer{ID: bob, Name: "bob"}); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, x); m.FromPerson || m.ID != "r1@beta" {
		t.Fatalf("bridged message %+v, want no person mark", m)
	}
	res, err := deliver("r2", "zulu", wire.Peer{ID: bob, Name: "bob"})
	if err != nil || !res.Held {
		t.Fatalf("bridged message to a holding session: %+v, %v", res, err)
	}
	if ids := heldIDs(t, w, "zulu"); len(ids) != 1 || ids[0] != "r2@beta" {
		t.Fatalf("held %v, want [r2@beta]", ids)
	}
	if got := stored(t, w, z.ID()); len(got) != 0 {
		t.Fatalf("held bridged message stored: %+v", got)
	}
	_, err = deliver("r3", "yankee", wire.Peer{ID: "m" + bob[1:], Name: "mallory"})
	wantCode(t, "bridged sender refused by name@host", err, wire.CodeRefused)
}
