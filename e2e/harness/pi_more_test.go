//go:build harness

package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A Pi whose extension API lacks a function the extension needs (here
// sendMessage, hidden by a wrapper extension that loads the real one) gets
// one clear line on stderr, no crash: pi -p still answers, with no intercom
// tool and no intercom session.
func TestPiMissingAPIRefusedInOneLine(t *testing.T) {
	eachPi(t, func(t *testing.T, line PiLine) {
		w := NewWorld(t)
		dir := w.Project("oldapi")
		src, err := filepath.Abs("../../integrations/pi/index.ts")
		if err != nil {
			t.Fatal(err)
		}
		wrapper := filepath.Join(w.Root, "old-api.ts")
		body := fmt.Sprintf(`import intercom from %q;
export default function (pi: any) {
  intercom(new Proxy(pi, { get: (t, k) => (k === "sendMessage" ? undefined : Reflect.get(t, k)) }));
}
`, src)
		if err := os.WriteFile(wrapper, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		m := NewAnthropic(t)
		m.Script(Turn{Text: "answered without intercom"})
		p := w.RunPiOnce("pi", dir, line, m, "hello", []string{"--no-extensions", "-e", wrapper})
		const want = "intercom: this Pi's extension API lacks sendMessage; intercom is off (it needs Pi 0.73 or 1.x)"
		log := p.Log()
		if n := strings.Count(log, want); n != 1 {
			t.Errorf("the refusal line %q is in Pi's output %d times, want 1\n%s", want, n, tailLines(log, 30))
		}
		for _, crash := range []string{"TypeError", "    at "} {
			if strings.Contains(log, crash) {
				t.Errorf("Pi's output shows a crash (%q)\n%s", crash, tailLines(log, 30))
			}
		}
		r := m.Answered(0)
		if r == nil {
			t.Fatalf("pi -p did not reach the model\n%s", m.Dump())
		}
		for _, tool := range []string{"load_intercom", "intercom", "contact_supervisor"} {
			if offers(r, tool) {
				t.Errorf("the model was offered %s by an extension that refused to run", tool)
			}
		}
		if got := w.SessionsIn(dir); len(got) != 0 {
			t.Errorf("the refusing extension registered intercom sessions: %+v", got)
		}
	})
}

// The intercom session is named after the Pi session name; an unnamed Pi
// session gets the guide's runtime-only fallback alias
// subagent-chat-<8 characters of the Pi session id>. A name given later
// (rpc set_session_name, /name) is the intercom name when the session is
// resumed (pi -c), with the same session id.
func TestPiSessionNamedAfterPiSession(t *testing.T) {
	eachPi(t, func(t *testing.T, line PiLine) {
		w := NewWorld(t)
		w.InstallPi()
		dir := w.Project("naming")
		m := NewAnthropic(t)
		m.Script(Turn{Text: "hello"}) // Pi saves a session once it has a turn
		pi := w.StartPi("pi", dir, line, m, nil)
		s := pi.Session()
		pi.Prompt("hi")
		piID := strings.TrimPrefix(s.ID, "pi-")
		if want := "subagent-chat-" + piID[:8]; s.Name != want {
			t.Errorf("the unnamed Pi session's intercom name is %q, want the fallback alias %q", s.Name, want)
		}
		from := len(pi.Events())
		pi.Send(map[string]any{"type": "set_session_name", "name": "planner"})
		pi.AwaitEvent(from, msgTimeout, "the set_session_name response", func(ev map[string]any) bool {
			return ev["type"] == "response" && ev["command"] == "set_session_name"
		})
		_ = pi.stdin.Close() // pi --mode rpc ends with its stdin
		pi.Wait(turnTimeout)
		again := w.StartPi("pi2", dir, line, m, []string{"-c"})
		Await(t, msgTimeout, func() bool {
			for _, r := range w.SessionsIn(dir) {
				if r.ID == s.ID && r.Connected && r.Name == "planner" {
					return true
				}
			}
			return false
		}, "the resumed Pi session %s to be named planner", s.ID)
		if got := again.Session(); got.ID != s.ID {
			t.Errorf("pi -c acts as %s, want %s", got.ID, s.ID)
		}
	})
}

// The configured shortcut (config shortcut alt+shift+k, sent as the CSI-u
// key ESC[107;4u) opens the compose flow in the interactive TUI.
func TestPiConfiguredShortcut(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not on PATH: the TUI test needs it")
	}
	eachPi(t, func(t *testing.T, line PiLine) {
		w := NewWorld(t)
		w.InstallPi()
		if err := os.WriteFile(filepath.Join(w.IntercomHome, "config.json"), []byte(`{"shortcut":"alt+shift+k"}`), 0o600); err != nil {
			t.Fatal(err)
		}
		dir := w.Project("shortcut")
		near := w.StartPeerIn("near", dir)
		note := marker("KEY")
		tui := w.StartPiTUI("pi", dir, line, NewAnthropic(t))
		tui.AwaitScreen("intercom-package")
		Await(t, msgTimeout, func() bool { return len(w.SessionsIn(dir)) == 2 }, "Pi's session beside near")
		tui.Raw([]byte("\x1b[107;4u"))
		tui.AwaitScreen("message which session?")
		tui.Keys("Enter")
		tui.AwaitScreen("intercom → near  [Send]")
		tui.Type(note)
		tui.AwaitScreen("> " + note)
		tui.Keys("Enter")
		if ev := near.AwaitMessage(note, msgTimeout); ev["expects_reply"] == true {
			t.Errorf("Send from the configured shortcut's compose asked for a reply: %v", ev)
		}
	})
}

// An idle interactive Pi (the TUI in tmux, nobody typing) is woken by an
// arriving steer: it starts a run whose request shows the message once,
// and the message is acknowledged.
func TestPiTUIIdleWokenBySteer(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not on PATH: the TUI test needs it")
	}
	eachPi(t, func(t *testing.T, line PiLine) {
		w, peer := piWorld(t)
		dir := w.Project("tui-wake")
		wake, answer := marker("WAKE"), marker("WOKEN")
		m := NewAnthropic(t)
		m.Script(Turn{If: func(r *Request) bool { return strings.Contains(lastUserText(r), wake) }, Text: answer})
		tui := w.StartPiTUI("pi", dir, line, m)
		tui.AwaitScreen("intercom-package")
		target := w.AgentSession(dir, "").ID
		peer.Send(target, wake)
		tui.AwaitScreen(answer)
		r := m.Answered(0)
		if r == nil {
			t.Fatalf("the steer did not wake the idle TUI Pi\n%s", m.Dump())
		}
		if n := userCount(r, wake); n != 1 {
			t.Errorf("the woken TUI Pi's model was shown the steer %d times, want 1", n)
		}
		Await(t, msgTimeout, func() bool { return len(w.Pending(target)) == 0 }, "the steer to be acknowledged")
	})
}

// A steer that arrives while the model writes its last answer (the run is
// ending) is not lost in Pi's queue: it starts a new run once Pi is idle
// and reaches the model once (Pi 0.73 needs the extension's drain; 1.6 has
// no such gap).
func TestPiSteerAtRunEndDrained(t *testing.T) {
	eachPi(t, func(t *testing.T, line PiLine) {
		w, peer := piWorld(t)
		dir := w.Project("runend")
		late := marker("LATE")
		m := NewAnthropic(t)
		pi := w.StartPi("pi", dir, line, m, nil)
		target := pi.Session().ID
		m.Script(
			Turn{Before: func(*Request) {
				out := w.OK("--session", peer.ID, "--json", "send", target, late)
				id := strings.SplitN(strings.TrimPrefix(out, `{"id":"`), `"`, 2)[0]
				Await(t, msgTimeout, func() bool { return strings.Contains(w.OK("trace", id), "pushed") }, "the late steer to reach Pi's holder")
			}, Text: "finishing"},
			Turn{If: func(r *Request) bool { return strings.Contains(lastUserText(r), late) }, Text: "got the late one"},
		)
		end := pi.Prompt("finish up")
		pi.AwaitEnd(end+1, msgTimeout)
		receivedOnce(t, w, m, 1, target, late, "the steer that arrived at run end")
	})
}

// Two tool calls of one model reply, run in parallel, each receive a
// message while they run: both reach the model in the request after the
// tools, together in one user turn.
func TestPiParallelToolArrivalsBatched(t *testing.T) {
	eachPi(t, func(t *testing.T, line PiLine) {
		w, peer := piWorld(t)
		dir := w.Project("parallel")
		a, b := marker("LEFT"), marker("RIGHT")
		m := NewAnthropic(t)
		pi := w.StartPi("pi", dir, line, m, nil)
		target := pi.Session().ID
		m.Script(
			Turn{Calls: []Call{PiBash(pushedDuringTool(peer.ID, target, a)), PiBash(pushedDuringTool(peer.ID, target, b))}},
			Turn{Text: "both tools done"},
		)
		pi.Prompt("run two tools")
		r := m.Answered(1)
		if r == nil {
			t.Fatalf("no request after the two tools\n%s", m.Dump())
		}
		for _, s := range []string{a, b} {
			if n := userCount(r, s); n != 1 {
				t.Errorf("the request after the tools shows %s %d times, want 1\n%s", s, n, m.Dump())
			}
		}
		if together := userTurnsHoldingAll(r, a, b); together != 1 {
			t.Errorf("the two arrivals reached the model in %d shared user turns, want 1 (one message)\n%s", together, m.Dump())
		}
		if left := w.Pending(target); len(left) != 0 {
			t.Errorf("still waiting after the model received them: %q", left)
		}
	})
}

// intercom({action:"reply"}) with no target answers the current ask (the
// one the model was just handed), even while an earlier ask to the same Pi
// is still pending: no "Multiple pending asks", and the earlier asker gets
// nothing.
func TestPiBareReplyAnswersCurrentAsk(t *testing.T) {
	eachPi(t, func(t *testing.T, line PiLine) {
		w := NewWorld(t)
		w.InstallPi()
		first, second := w.StartPeer("first"), w.StartPeer("second")
		dir := w.Project("current-ask")
		q1, q2, a2 := marker("Q-FIRST"), marker("Q-SECOND"), marker("A-SECOND")
		m := NewAnthropic(t)
		m.Script(Turn{Text: "ready"})
		pi := w.StartPi("pi", dir, line, m, nil)
		target := pi.Session().ID
		end := pi.Prompt("hello")
		ask := func(from *Peer, q string) *Agent {
			return w.startAgent("ask-"+q, w.Root, nil, nil, false, filepath.Join(binDir, "intercom"),
				"--session", from.ID, "--json", "ask", "--timeout", "5m", target, q)
		}
		// An ask that lands while Pi still reports its run (its extension
		// says idle just after Pi's agent_end) is refused peer_busy and
		// arrives as a plain message: each ask waits for the idle report.
		m.Script(Turn{If: func(r *Request) bool { return strings.Contains(lastUserText(r), q1) }, Text: "later"})
		w.awaitStatus(target, "idle")
		ask(first, q1)
		end = pi.AwaitEnd(end+1, msgTimeout)
		m.Script(
			Turn{If: func(r *Request) bool { return strings.Contains(lastUserText(r), q2) },
				Calls: []Call{PiIntercom(map[string]any{"action": "reply", "message": a2})}},
			Turn{Text: "replied"},
		)
		w.awaitStatus(target, "idle")
		asked := ask(second, q2)
		pi.AwaitEnd(end+1, msgTimeout)
		if r := m.Answered(3); r == nil || !strings.Contains(lastUserText(r), "Reply sent to second") {
			t.Fatalf("the bare reply did not answer the current ask (second's)\n%s", m.Dump())
		}
		if code := asked.Wait(msgTimeout); code != 0 {
			t.Fatalf("second's ask exited %d\n%s", code, asked.Log())
		}
		if !strings.Contains(asked.Log(), a2) {
			t.Errorf("second's ask did not return the reply: %s", asked.Log())
		}
		if left := w.Intercom("", nil, "--session", target, "--json", "pending"); !strings.Contains(left.Stdout, q1) || strings.Contains(left.Stdout, q2) {
			t.Errorf("after the reply the pending asks should be first's only: %s", left.Stdout)
		}
	})
}
