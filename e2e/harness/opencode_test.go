//go:build harness

package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// openCodeWorld is a world with `intercom install opencode` done for model,
// and a peer.
func openCodeWorld(t *testing.T) (*World, *Model, *Peer) {
	m := NewChatCompletions(t)
	w := NewWorld(t)
	w.InstallOpenCode(m)
	return w, m, w.StartPeer("peer")
}

// gate is a shell command that waits for its file, so a test can act while
// OpenCode's bash tool is running; open lets it finish.
func gate(dir string) (command string, open func()) {
	path := filepath.Join(dir, "gate-"+marker("G"))
	return "while [ ! -e " + path + " ]; do sleep 0.05; done; echo gate open", func() { _ = os.WriteFile(path, nil, 0o644) }
}

// A message that arrives while the bash tool runs reaches the model inside
// that tool's result, once, and the session reported tool:bash meanwhile.
func TestOpenCodeDeliversAtToolBoundary(t *testing.T) {
	w, m, peer := openCodeWorld(t)
	dir := w.Project("boundary")
	msg := marker("BOUNDARY")
	cmd, open := gate(dir)
	m.Script(
		Turn{Calls: []Call{OpenCodeBash(cmd)}},
		Turn{If: func(r *Request) bool { return r.Contains(msg) }, Text: "got it"},
	)
	oc := w.RunOpenCode("oc", dir, m, "run the gate")
	id := ""
	Await(t, turnTimeout, func() bool { id = oc.SessionID(); return id != "" }, "the run's session id")
	sid := intercomSession(id)
	w.awaitStatus(sid, "tool:bash")
	peer.Send(sid, msg)
	open()
	oc.Finish(turnTimeout)
	seenOnce(t, m, msg, "message at the tool boundary")
	if r := m.Answered(1); r == nil || !toolResultHolds(r, msg) {
		t.Errorf("the message did not come inside the bash tool's result")
	}
	if left := w.Pending(sid); len(left) != 0 {
		t.Errorf("messages still waiting after delivery: %q", left)
	}
}

// toolResultHolds reports whether a tool message of r holds s.
func toolResultHolds(r *Request, s string) bool {
	msgs, _ := r.JSON["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		if mm["role"] == "tool" && strings.Contains(mustJSON(mm["content"]), s) {
			return true
		}
	}
	return false
}

// awaitDelivered waits, off the test goroutine (a turn's Before), until
// session id has nothing waiting: the plugin handed it over.
func (w *World) awaitDelivered(id string) {
	deadline := time.Now().Add(msgTimeout)
	for time.Now().Before(deadline) {
		r := w.Intercom("", nil, "--session", id, "--json", "inbox", "--peek")
		if r.Code == 0 && !strings.Contains(r.Stdout, `"id"`) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	w.t.Errorf("messages for %s were never handed over", id)
}

// openCodeSessionIn is the id of the one intercom session in dir, for a
// turn's Before (off the test goroutine: a failure is a test error).
func (w *World) openCodeSessionIn(dir string) string {
	rows, err := w.listSessions()
	if err != nil {
		w.t.Error(err)
		return ""
	}
	if in := inDir(rows, dir); len(in) == 1 {
		return in[0].ID
	}
	w.t.Errorf("want one session in %s, have %+v", dir, inDir(rows, dir))
	return ""
}

// A message that arrives while the model is answering (no tool running)
// is injected as a prompt: the same run reads it with its next request.
func TestOpenCodeInjectsIntoBusySession(t *testing.T) {
	w, m, peer := openCodeWorld(t)
	dir := w.Project("busy")
	msg := marker("BUSY")
	m.Script(
		Turn{Before: func(*Request) {
			sid := w.openCodeSessionIn(dir)
			peer.Send(sid, msg)
			w.awaitDelivered(sid)
		}, Text: "still thinking"},
		Turn{If: func(r *Request) bool { return r.Contains(msg) }, Text: "got it"},
	)
	oc := w.RunOpenCode("oc", dir, m, "think")
	oc.Finish(turnTimeout)
	seenOnce(t, m, msg, "message injected into a busy session")
	if r := m.Answered(1); r == nil || lastUserText(r) == "" || !strings.Contains(lastUserText(r), msg) {
		t.Errorf("the injected message is not the last user message of the next request")
	}
}

// startServe is `opencode serve` in dir with one session that has had one
// turn (prompt), idle now; it returns the server and the session id.
func startServe(t *testing.T, w *World, m *Model, dir string, prompts ...string) (*OpenCode, []string) {
	oc := w.ServeOpenCode("serve", dir, m)
	var ids []string
	for _, p := range prompts {
		first := m.Script(Turn{If: func(r *Request) bool { return r.Contains(p) }, Text: "ready"})
		id := oc.NewSession()
		oc.PromptAsync(id, p)
		Await(t, turnTimeout, func() bool { return m.Answered(first) != nil }, "the first turn of %s", id)
		oc.AwaitIdle(id)
		ids = append(ids, id)
	}
	return oc, ids
}

// idleServeSession starts `opencode serve` in dir with one session that
// has had a turn and reports idle; it returns its intercom session.
func idleServeSession(t *testing.T, w *World, m *Model, dir string) string {
	_, ids := startServe(t, w, m, dir, marker("HELLO"))
	sid := intercomSession(ids[0])
	w.awaitStatus(sid, "idle")
	return sid
}

// An idle `opencode serve` session, with nobody typing, is woken by a
// steer: the message starts a turn by itself.
func TestOpenCodeWakesIdleServeSession(t *testing.T) {
	w, m, peer := openCodeWorld(t)
	dir := w.Project("idle")
	sid := idleServeSession(t, w, m, dir)
	msg := marker("WAKE")
	woke := m.Script(Turn{If: func(r *Request) bool { return r.Contains(msg) }, Text: "woken"})
	peer.Send(sid, msg)
	Await(t, turnTimeout, func() bool { return m.Answered(woke) != nil }, "the idle session to wake with %s", msg)
	seenOnce(t, m, msg, "message that woke an idle session")
}

// Two sessions of one opencode process are two intercom sessions: each
// has its own id and inbox, and a message to one reaches only its
// conversation.
func TestOpenCodeSessionsOfOneProcessAreSeparate(t *testing.T) {
	w, m, peer := openCodeWorld(t)
	dir := w.Project("two")
	helloA, helloB := marker("HELLO-A"), marker("HELLO-B")
	_, ids := startServe(t, w, m, dir, helloA, helloB)
	a, b := intercomSession(ids[0]), intercomSession(ids[1])
	if a == b {
		t.Fatalf("both sessions are %s", a)
	}
	for _, id := range []string{a, b} {
		w.awaitStatus(id, "idle")
	}
	toA, toB := marker("TO-A"), marker("TO-B")
	wokeA := m.Script(Turn{If: func(r *Request) bool { return r.Contains(toA) }, Text: "a woken"})
	peer.Send(a, toA)
	Await(t, turnTimeout, func() bool { return m.Answered(wokeA) != nil }, "session A to wake")
	wokeB := m.Script(Turn{If: func(r *Request) bool { return r.Contains(toB) }, Text: "b woken"})
	peer.Send(b, toB)
	Await(t, turnTimeout, func() bool { return m.Answered(wokeB) != nil }, "session B to wake")
	for _, c := range []struct {
		req        *Request
		mine, hers string
		own, other string
	}{{m.Answered(wokeA), helloA, helloB, toA, toB}, {m.Answered(wokeB), helloB, helloA, toB, toA}} {
		if !c.req.Contains(c.mine) || c.req.Contains(c.hers) || c.req.Count(c.own) != 1 || c.req.Contains(c.other) {
			t.Errorf("request %d mixes the sessions: holds %s:%v %s:%v %s:%d %s:%v", c.req.N,
				c.mine, c.req.Contains(c.mine), c.hers, c.req.Contains(c.hers), c.own, c.req.Count(c.own), c.other, c.req.Contains(c.other))
		}
	}
}

// The agent's shell commands act as its own session: `intercom send` run by
// the bash tool comes from oc-<session>, in a process with two sessions.
func TestOpenCodeShellActsAsItsSession(t *testing.T) {
	w, m, peer := openCodeWorld(t)
	dir := w.Project("shell")
	oc, ids := startServe(t, w, m, dir, marker("HELLO-A"), marker("HELLO-B"))
	for _, id := range ids {
		msg := marker("SHELL")
		m.Script(Turn{Calls: []Call{OpenCodeBash("intercom send peer " + msg)}}, Turn{Text: "sent"})
		oc.PromptAsync(id, "tell the peer")
		ev := peer.AwaitMessage(msg, msgTimeout)
		if from := Sender(ev); from != intercomSession(id) {
			t.Errorf("shell send from %s came from %s, want %s", id, from, intercomSession(id))
		}
		oc.AwaitIdle(id)
	}
}

// The plugin's intercom tool sends, asks and replies as its session.
func TestOpenCodeToolSendAskReply(t *testing.T) {
	w, m, peer := openCodeWorld(t)
	dir := w.Project("tool")
	oc, ids := startServe(t, w, m, dir, marker("HELLO"))
	id, sid := ids[0], intercomSession(ids[0])

	sent, question, answer := marker("SENT"), marker("Q"), marker("A")
	m.Script(
		Turn{Calls: []Call{OpenCodeIntercom(map[string]any{"action": "send", "to": "peer", "message": sent})}},
		Turn{Calls: []Call{OpenCodeIntercom(map[string]any{"action": "ask", "to": "peer", "message": question})}},
		Turn{If: func(r *Request) bool { return r.Contains(answer) }, Text: "answered"},
	)
	replied := make(chan Result, 1)
	go func() {
		if _, ok := peer.WaitMessage(question, msgTimeout); ok {
			replied <- w.Intercom("", nil, "--session", peer.ID, "reply", answer)
		}
	}()
	oc.PromptAsync(id, "use the tool")
	if from := Sender(peer.AwaitMessage(sent, msgTimeout)); from != sid {
		t.Errorf("tool send came from %s, want %s", from, sid)
	}
	if from := Sender(peer.AwaitMessage(question, msgTimeout)); from != sid {
		t.Errorf("tool ask came from %s, want %s", from, sid)
	}
	if r := <-replied; r.Code != 0 {
		t.Fatalf("peer reply: exit %d: %s", r.Code, r.Stderr)
	}
	oc.AwaitIdle(id)
	seenOnce(t, m, answer, "the answer to the tool's ask")
	if !toolResultHolds(m.Last(), answer) {
		t.Errorf("the answer did not come back as the ask tool's result")
	}

	// The peer asks; the idle session wakes and answers with the tool.
	ask, reply := marker("ASK"), marker("REPLY")
	m.Script(
		Turn{If: func(r *Request) bool { return r.Contains(ask) }, Calls: []Call{OpenCodeIntercom(map[string]any{"action": "reply", "message": reply})}},
		Turn{Text: "replied"},
	)
	res := w.Intercom("", nil, "--session", peer.ID, "ask", "--timeout", "2m", sid, ask)
	if res.Code != 0 || !strings.Contains(res.Stdout, reply) {
		t.Errorf("the peer's ask got exit %d %q (stderr %q), want the reply %s", res.Code, res.Stdout, res.Stderr, reply)
	}
}

// A message sent while no opencode runs the session waits in its inbox and
// joins the next `opencode run -s ID`, once; the run before it did not
// take it (a one-shot run does not wake at its end).
func TestOpenCodeRunResumedGetsWaitingMessage(t *testing.T) {
	w, m, peer := openCodeWorld(t)
	dir := w.Project("resume")
	m.Script(Turn{Text: "first run"})
	first := w.RunOpenCode("oc1", dir, m, "hello")
	first.Finish(turnTimeout)
	id := first.SessionID()
	sid := intercomSession(id)
	msg := marker("BETWEEN")
	peer.Send(sid, msg)
	if left := w.Pending(sid); len(left) != 1 {
		t.Fatalf("the message is not waiting between runs: %q", left)
	}
	m.Script(Turn{If: func(r *Request) bool { return r.Contains(msg) }, Text: "got it"})
	w.RunOpenCode("oc2", dir, m, "carry on", "-s", id).Finish(turnTimeout)
	seenOnce(t, m, msg, "message waiting for a resumed run")
	if left := w.Pending(sid); len(left) != 0 {
		t.Errorf("still waiting after the resumed run: %q", left)
	}
}

// The plugin type-checks (tsc --strict) against the pinned
// @opencode-ai/plugin and @opencode-ai/sdk types, its contract.
func TestOpenCodePluginTypeChecks(t *testing.T) {
	dir := openCodeDir(t)
	tmp := t.TempDir()
	src, err := os.ReadFile("../../integrations/opencode/intercom.ts")
	if err != nil {
		t.Fatal(err)
	}
	tsconfig := `{"compilerOptions":{"strict":true,"noEmit":true,"target":"ES2022","module":"ESNext","moduleResolution":"Bundler",` +
		`"skipLibCheck":true,"types":["node"]},"files":["intercom.ts"]}`
	for name, data := range map[string][]byte{"intercom.ts": src, "tsconfig.json": []byte(tsconfig)} {
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(dir, "node_modules"), filepath.Join(tmp, "node_modules")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := withTimeout(turnTimeout)
	defer cancel()
	if out, err := run(ctx, tmp, filepath.Join(dir, "node_modules", ".bin", "tsc"), "-p", "."); err != nil {
		t.Fatalf("tsc: %v\n%s", err, out)
	}
}

// When intercom cannot run, the plugin never gets in OpenCode's way: the
// turn and its tool calls go on, and the problem is one line on stderr.
func TestOpenCodeWithoutIntercomStillWorks(t *testing.T) {
	w, m, _ := openCodeWorld(t)
	dir := w.Project("broken")
	m.Script(Turn{Calls: []Call{OpenCodeBash("echo still-works")}}, Turn{Text: "done"})
	oc := w.RunOpenCodeEnv("oc", dir, m, "go", []string{"INTERCOM_BIN=" + filepath.Join(w.Root, "no-such-intercom")})
	oc.Finish(turnTimeout)
	if r := m.Answered(1); r == nil || !toolResultHolds(r, "still-works") {
		t.Fatalf("the bash tool's result did not reach the model")
	}
	if n := strings.Count(oc.Log(), "intercom: "); n != 1 {
		t.Errorf("%d lines on stderr say what went wrong, want 1:\n%s", n, tailLines(oc.Log(), 20))
	}
	if len(w.Sessions()) != 1 { // the peer only
		t.Errorf("sessions %+v, want only the peer", w.Sessions())
	}
}

// A passive message never wakes a session: an idle serve session woken by a
// later steer gets only the steer as its prompt, and the passive one at the
// next tool boundary, once each.
func TestOpenCodePassiveWaitsForToolBoundary(t *testing.T) {
	w, m, peer := openCodeWorld(t)
	dir := w.Project("passive")
	sid := idleServeSession(t, w, m, dir)
	passive, steer := marker("PASSIVE"), marker("STEER")
	if r := w.Intercom("", nil, "--session", peer.ID, "send", "--delivery", "passive", sid, passive); r.Code != 0 {
		t.Fatalf("passive send: exit %d: %s", r.Code, r.Stderr)
	}
	woke := m.Script(
		Turn{If: func(r *Request) bool { return r.Contains(steer) }, Calls: []Call{OpenCodeBash("echo boundary")}},
		Turn{If: func(r *Request) bool { return r.Contains(passive) }, Text: "both seen"},
	)
	peer.Send(sid, steer)
	Await(t, turnTimeout, func() bool { return m.Answered(woke+1) != nil }, "the woken turn to reach its tool boundary")
	if m.Answered(woke).Contains(passive) {
		t.Errorf("the passive message came with the wake-up")
	}
	if !toolResultHolds(m.Answered(woke+1), passive) {
		t.Errorf("the passive message did not come in the tool result")
	}
	seenOnce(t, m, passive, "passive message")
	seenOnce(t, m, steer, "steer that woke the session")
}

// A message longer than one hand-over wakes an idle session and comes
// whole, in numbered parts, each line once.
func TestOpenCodeLongMessageComesWhole(t *testing.T) {
	w, m, peer := openCodeWorld(t)
	dir := w.Project("long")
	sid := idleServeSession(t, w, m, dir)
	body, lines := longBody(marker("LONG"), 250) // about 25,000 characters: several parts
	peer.Send(sid, body)
	Await(t, turnTimeout, func() bool {
		last := m.Last()
		return last != nil && last.Contains(lines[len(lines)-1]) && len(w.Pending(sid)) == 0
	}, "the last part to reach the model")
	w.awaitStatus(sid, "idle")
	seenWhole(t, m, lines)
	if last := m.Last(); !last.Contains("part 1 of ") || !last.Contains("[end of message") {
		t.Errorf("the message did not come in numbered parts ending with [end of message …]")
	}
}
