//go:build harness

package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// piWorld is a world with `intercom install pi` done and a peer.
func piWorld(t *testing.T) (*World, *Peer) {
	w := NewWorld(t)
	w.InstallPi()
	return w, w.StartPeer("peer")
}

// pushedDuringTool is a shell command that sends text from session from
// to target and returns once the broker has pushed it to target's holder
// (the Pi extension's child): the message arrives while this tool runs.
func pushedDuringTool(from, target string, texts ...string) string {
	var b strings.Builder
	for _, text := range texts {
		fmt.Fprintf(&b, `id=$(intercom --session %s --json send %s %s | sed -n 's/^{"id":"\([^"]*\)".*/\1/p'); `, from, target, text)
		b.WriteString(`until intercom trace "$id" | grep -q pushed; do sleep 0.1; done; `)
	}
	b.WriteString("echo sent")
	return b.String()
}

// Two messages that arrive while a tool runs reach the model at that tool
// boundary, together in one message (not one request each), each once, and
// are acknowledged only then.
func TestPiSteerAtToolBoundary(t *testing.T) {
	eachPi(t, func(t *testing.T, line PiLine) {
		w, peer := piWorld(t)
		dir := w.Project("steer")
		a, b := marker("FIRST"), marker("SECOND")
		m := NewAnthropic(t)
		pi := w.StartPi("pi", dir, line, m, nil)
		target := pi.Session().ID
		m.Script(
			Turn{Calls: []Call{PiBash(pushedDuringTool(peer.ID, target, a, b))}},
			Turn{Text: "handled both"},
		)
		pi.Prompt("do the work")
		r := m.Answered(1)
		if r == nil {
			t.Fatalf("the model never got the request after the tool\n%s", m.Dump())
		}
		if !strings.Contains(lastUserText(r), "sent") {
			t.Fatalf("request %d is not the one right after the tool result", r.N)
		}
		for _, s := range []string{a, b} {
			if n := userCount(r, s); n != 1 {
				t.Errorf("the request after the tool shows the model %s %d times, want 1", s, n)
			}
		}
		if together := userTurnsHoldingAll(r, a, b); together != 1 {
			t.Errorf("the two messages reached the model in %d shared user turns, want 1 (batched)", together)
		}
		if first := m.Answered(0); first != nil && (userCount(first, a) > 0 || userCount(first, b) > 0) {
			t.Errorf("the first request already held a message sent during the tool")
		}
		if left := w.Pending(target); len(left) != 0 {
			t.Errorf("still waiting after the model received them (not acknowledged): %q", left)
		}
	})
}

// An idle Pi (its run over, nobody typing) is woken by an arriving steer:
// the message starts a run and reaches the model once, and is acknowledged.
func TestPiIdleWoken(t *testing.T) {
	eachPi(t, func(t *testing.T, line PiLine) {
		w, peer := piWorld(t)
		dir := w.Project("idle")
		wake := marker("WAKE")
		m := NewAnthropic(t)
		m.Script(Turn{Text: "ready"})
		pi := w.StartPi("pi", dir, line, m, nil)
		target := pi.Session().ID
		end := pi.Prompt("hello")
		m.Script(Turn{If: func(r *Request) bool { return strings.Contains(lastUserText(r), wake) }, Text: "woken and handled"})
		peer.Send(target, wake)
		pi.AwaitEnd(end+1, msgTimeout)
		r := m.Answered(1)
		if r == nil {
			t.Fatalf("the message did not wake the idle Pi\n%s", m.Dump())
		}
		if n := userCount(r, wake); n != 1 {
			t.Errorf("the woken request shows %s %d times, want 1", wake, n)
		}
		if left := w.Pending(target); len(left) != 0 {
			t.Errorf("still waiting after the model received it: %q", left)
		}
	})
}

// `pi -p` with the extension ends (the extension's child ends with the
// session), and the model's own bash commands act as its intercom session.
func TestPiOneShotBashActsAsSession(t *testing.T) {
	eachPi(t, func(t *testing.T, line PiLine) {
		w, peer := piWorld(t)
		dir := w.Project("oneshot")
		note := marker("NOTE")
		m := NewAnthropic(t)
		m.Script(Turn{Calls: []Call{PiBash("intercom send peer " + note)}}, Turn{Text: "one shot done"})
		w.RunPiOnce("pi", dir, line, m, "tell the peer", nil)
		ev := peer.AwaitMessage(note, msgTimeout)
		if from := Sender(ev); !strings.HasPrefix(from, "pi-") {
			t.Errorf("the model's bash command sent as %q, want the Pi session (pi-<session id>)", from)
		}
		var left []string
		Await(t, 30*time.Second, func() bool {
			left = w.intercomLeftovers(peer.Pid())
			return len(left) == 0
		}, "the intercom processes started for the one-shot pi to end")
		if len(left) > 0 {
			t.Logf("still running: %q", left)
		}
	})
}

// The intercom tool's schema stays out of the model's requests until
// load_intercom({}), which sends nothing; then intercom send reaches the
// peer and its result is the reference's text.
func TestPiLoadIntercomThenSend(t *testing.T) {
	eachPi(t, func(t *testing.T, line PiLine) {
		w, peer := piWorld(t)
		dir := w.Project("load")
		note := marker("NOTE")
		afterLoad := make(chan int, 1)
		m := NewAnthropic(t)
		m.Script(
			Turn{Calls: []Call{{Name: "load_intercom", Args: map[string]any{}}}},
			Turn{If: func(r *Request) bool { return offers(r, "intercom") }, Before: func(*Request) { afterLoad <- len(peer.Events()) },
				Calls: []Call{PiIntercom(map[string]any{"action": "send", "to": "peer", "message": note})}},
			Turn{Text: "sent it"},
		)
		w.RunPiOnce("pi", dir, line, m, "message the peer", nil)
		first := m.Answered(0)
		if first == nil || !offers(first, "load_intercom") || offers(first, "intercom") {
			t.Fatalf("the first request should offer load_intercom and not intercom\n%s", m.Dump())
		}
		if offers(first, "contact_supervisor") {
			t.Errorf("a Pi outside agent-runs was offered contact_supervisor")
		}
		select {
		case n := <-afterLoad:
			if n != 1 { // the peer's "attached" line only
				t.Errorf("the peer had %d events after load_intercom, want 1: it sent something", n)
			}
		default:
			t.Errorf("the request after load_intercom did not offer the intercom tool")
		}
		peer.AwaitMessage(note, msgTimeout)
		if last := m.Answered(2); last == nil || !strings.Contains(lastUserText(last), "Message sent to peer") {
			t.Errorf("the intercom send result the model got is not the reference's text")
		}
	})
}

// Pi's lifecycle is the session's status, with the configured suffix:
// thinking while the model works, tool:bash in a bash call, idle after.
func TestPiStatusReported(t *testing.T) {
	eachPi(t, func(t *testing.T, line PiLine) {
		w, _ := piWorld(t)
		if err := os.WriteFile(filepath.Join(w.IntercomHome, "config.json"), []byte(`{"status":"researching"}`), 0o600); err != nil {
			t.Fatal(err)
		}
		dir := w.Project("status")
		m := NewAnthropic(t)
		pi := w.StartPi("pi", dir, line, m, nil)
		target := pi.Session().ID
		statusIs := func(want string) bool {
			for _, s := range w.SessionsIn(dir) {
				if s.ID == target {
					return s.Status == want
				}
			}
			return false
		}
		Await(t, msgTimeout, func() bool { return statusIs("idle · researching") }, "status idle · researching at start")
		thinking := make(chan bool, 1)
		wait := `until intercom --json list | grep -q '"status":"tool:bash · researching"'; do sleep 0.1; done; echo STATUS-SEEN`
		m.Script(
			Turn{Before: func(*Request) {
				deadline := time.Now().Add(msgTimeout)
				for !statusIs("thinking · researching") && time.Now().Before(deadline) {
					time.Sleep(50 * time.Millisecond)
				}
				thinking <- statusIs("thinking · researching")
			}, Calls: []Call{PiBash(wait)}},
			Turn{Text: "done"},
		)
		pi.Prompt("work")
		if !<-thinking {
			t.Errorf("status was not thinking · researching while the model worked")
		}
		if r := m.Answered(1); r == nil || !strings.Contains(lastUserText(r), "STATUS-SEEN") {
			t.Errorf("the bash call never saw its own status tool:bash · researching")
		}
		Await(t, msgTimeout, func() bool { return statusIs("idle · researching") }, "status idle · researching after the run")
	})
}

// `pi -c` resumes the same intercom session (keyed on Pi's session id),
// with the mail that arrived while Pi was not running: it wakes the
// resumed Pi and reaches the model once.
func TestPiResumeKeepsSessionAndMail(t *testing.T) {
	eachPi(t, func(t *testing.T, line PiLine) {
		w, peer := piWorld(t)
		dir := w.Project("resume")
		mail := marker("MAIL")
		m := NewAnthropic(t)
		m.Script(Turn{Text: "first run"})
		w.RunPiOnce("pi", dir, line, m, "hello", nil)
		before := w.AgentSession(dir, "")
		if !strings.HasPrefix(before.ID, "pi-") {
			t.Fatalf("Pi's session is %q, want pi-<Pi session id>", before.ID)
		}
		Await(t, msgTimeout, func() bool {
			for _, s := range w.SessionsIn(dir) {
				if s.ID == before.ID {
					return !s.Connected
				}
			}
			return false
		}, "the one-shot Pi's session to disconnect")
		peer.Send(before.ID, mail)
		m.Script(Turn{If: func(r *Request) bool { return strings.Contains(lastUserText(r), mail) }, Text: "read the mail"})
		pi := w.StartPi("pi2", dir, line, m, []string{"-c"})
		pi.AwaitEnd(0, turnTimeout)
		if after := pi.Session(); after.ID != before.ID {
			t.Errorf("pi -c acts as session %s, want the resumed %s", after.ID, before.ID)
		}
		r := m.Answered(1)
		if r == nil {
			t.Fatalf("the mail never reached the resumed Pi\n%s", m.Dump())
		}
		if n := userCount(r, mail); n != 1 {
			t.Errorf("the resumed Pi's model saw %s %d times, want 1", mail, n)
		}
		if left := w.Pending(before.ID); len(left) != 0 {
			t.Errorf("still waiting after the model received it: %q", left)
		}
	})
}

// Pi and Claude Code ask each other and reply, each through its own
// integration: Claude's ask wakes the idle Pi, whose model sees the reply
// hint and answers with intercom({action:"reply"}); Pi's ask wakes the idle
// Claude Code, whose reply is the result of Pi's intercom ask.
func TestPiAndClaudeAskEachOther(t *testing.T) {
	eachPi(t, func(t *testing.T, line PiLine) {
		w := NewWorld(t)
		w.InstallPi()
		w.InstallClaude()
		piDir, clDir := w.Project("pi-side"), w.Project("claude-side")
		q1, a1, q2, a2 := marker("Q-FROM-CLAUDE"), marker("A-FROM-PI"), marker("Q-FROM-PI"), marker("A-FROM-CLAUDE")

		pm := NewAnthropic(t)
		pi := w.StartPi("pi", piDir, line, pm, nil)
		piTarget := pi.Session().ID
		cm := NewAnthropic(t)
		cm.Script(Turn{Text: "ready"})
		cl := w.StartClaude("claude", clDir, cm)
		cl.Turn("hello", "ready", turnTimeout)
		clTarget := w.AgentSession(clDir, cl.SessionID).ID

		// Claude asks; the idle Pi is woken with the ask and replies.
		pm.Script(
			Turn{If: func(r *Request) bool { return strings.Contains(lastUserText(r), q1) },
				Calls: []Call{PiIntercom(map[string]any{"action": "reply", "message": a1})}},
			Turn{Text: "replied"},
		)
		cm.Script(
			Turn{Calls: []Call{ClaudeIntercom(map[string]any{"action": "ask", "to": piTarget, "message": q1})}},
			Turn{If: func(r *Request) bool { return strings.Contains(lastUserText(r), a1) }, Text: "got the answer from pi"},
		)
		cl.Turn("ask pi", "got the answer from pi", turnTimeout)
		woke := pm.Answered(0)
		if woke == nil || !strings.Contains(lastUserText(woke), `intercom({ action: "reply"`) {
			t.Errorf("the ask Pi's model was shown carries no reply hint")
		}
		if woke != nil && !offers(woke, "intercom") {
			t.Errorf("the inbound ask did not enable the intercom tool before it was delivered")
		}

		// Pi asks; the idle Claude Code is woken and replies.
		cm.Script(
			Turn{If: func(r *Request) bool { return strings.Contains(lastUserText(r), q2) },
				Calls: []Call{ClaudeIntercom(map[string]any{"action": "reply", "message": a2})}},
			Turn{Text: "answered pi"},
		)
		pm.Script(
			Turn{Calls: []Call{PiIntercom(map[string]any{"action": "ask", "to": clTarget, "message": q2})}},
			Turn{If: func(r *Request) bool { return strings.Contains(lastUserText(r), a2) }, Text: "got the answer from claude"},
		)
		pi.Prompt("ask claude")
		if r := pm.Answered(3); r == nil || !strings.Contains(lastUserText(r), "Reply from") {
			t.Fatalf("Pi's ask did not return Claude Code's reply\n%s", pm.Dump())
		}
		noHookFailed(t, cl)
	})
}

// /intercom picks a session of this project with a select dialog, then
// Send or Request Reply, then the text, and sends it; /intercom all offers
// the sessions of other projects too; Esc (cancel) sends nothing;
// /intercom topics shows the topic records. Driven in --mode rpc, where
// the dialogs are extension_ui_request lines.
func TestPiIntercomCommandDialogs(t *testing.T) {
	eachPi(t, func(t *testing.T, line PiLine) {
		w, far := piWorld(t)
		dir := w.Project("dialogs")
		near := w.StartPeerIn("near", dir)
		note, topicNote := marker("OVERLAY"), marker("TOPIC")
		pi := w.StartPi("pi", dir, line, NewAnthropic(t), nil)
		pi.Session()

		from := len(pi.Events())
		pi.Send(map[string]any{"type": "prompt", "message": "/intercom"})
		i := pi.AwaitUI(from, "select")
		options, _ := pi.Events()[i]["options"].([]any)
		var nearLabel string
		for _, o := range options {
			s, _ := o.(string)
			if strings.HasPrefix(s, "near ") {
				nearLabel = s
			}
			if strings.HasPrefix(s, "peer ") {
				t.Errorf("/intercom (this project) offered the other project's session: %q", s)
			}
		}
		if nearLabel == "" {
			t.Fatalf("/intercom did not offer this project's session near: %v", options)
		}
		pi.Answer(i, nearLabel)
		i = pi.AwaitUI(i+1, "select")
		pi.Answer(i, "Request Reply")
		i = pi.AwaitUI(i+1, "input")
		pi.Answer(i, note)
		ev := near.AwaitMessage(note, msgTimeout)
		if ev["expects_reply"] != true {
			t.Errorf("Request Reply sent a message that does not ask for a reply: %v", ev)
		}

		from = len(pi.Events())
		pi.Send(map[string]any{"type": "prompt", "message": "/intercom all"})
		i = pi.AwaitUI(from, "select")
		if got := mustJSON(pi.Events()[i]["options"]); !strings.Contains(got, `"peer (`) {
			t.Errorf("/intercom all did not offer the other project's session: %s", got)
		}
		pi.Answer(i, nil)

		if r := w.Intercom("", nil, "--session", far.ID, "publish", "dialogs/shared", topicNote); r.Code != 0 {
			t.Fatalf("publish: %s", r.Stderr)
		}
		from = len(pi.Events())
		pi.Send(map[string]any{"type": "prompt", "message": "/intercom topics"})
		pi.AwaitEvent(from, msgTimeout, "a notify holding the topic record", func(ev map[string]any) bool {
			msg, _ := ev["message"].(string)
			return ev["type"] == "extension_ui_request" && ev["method"] == "notify" && strings.Contains(msg, topicNote)
		})
		if far.Messages(note) != 0 {
			t.Errorf("the cancelled /intercom all sent something")
		}
	})
}

// A Pi child started with `agent-runs start` has contact_supervisor (a
// plain Pi has not): progress_update steers and returns at once;
// need_decision persists the question, steers it to the supervisor, blocks
// without the ask timeout, and returns the supervisor's reply as the tool
// result.
func TestPiChildContactsSupervisor(t *testing.T) {
	eachPi(t, func(t *testing.T, line PiLine) {
		w := NewWorld(t)
		w.InstallPi()
		boss := w.StartPeer("boss")
		dir := w.Project("child")
		question, answer := marker("DECIDE"), marker("ANSWER")
		m := NewAnthropic(t)
		progress := marker("PROGRESS")
		m.Script(
			Turn{Calls: []Call{{Name: "contact_supervisor", Args: map[string]any{"reason": "progress_update", "message": progress}}}},
			Turn{If: func(r *Request) bool { return strings.Contains(lastUserText(r), "Progress update accepted") },
				Calls: []Call{{Name: "contact_supervisor", Args: map[string]any{"reason": "need_decision", "message": question}}}},
			Turn{If: func(r *Request) bool { return strings.Contains(lastUserText(r), answer) }, Text: "decided"},
		)
		argv := append([]string{agentRunsBin(t), "--supervisor", boss.ID, "start", "--agent", "worker", "--wait", "--"},
			line.argv("-p", "--model", w.piModel("child", m), "decide something")...)
		run := w.startAgent("agent-runs", dir, m, piEnv(nil), false, argv...)
		boss.AwaitMessage(progress, turnTimeout) // returned at once: the question follows
		boss.AwaitMessage(question, turnTimeout)
		if first := m.Answered(0); first == nil || !offers(first, "contact_supervisor") {
			t.Fatalf("the run's Pi child was not offered contact_supervisor\n%s", m.Dump())
		}
		if r := w.Intercom("", nil, "--session", boss.ID, "reply", answer); r.Code != 0 {
			t.Fatalf("supervisor reply: exit %d: %s", r.Code, r.Stderr)
		}
		if code := run.Wait(turnTimeout); code != 0 {
			t.Fatalf("agent-runs start --wait exited %d\n%s", code, tailLines(run.Log(), 30))
		}
		if r := m.Answered(2); r == nil || !strings.Contains(lastUserText(r), "Reply from supervisor: "+answer) {
			t.Errorf("contact_supervisor did not return the supervisor's reply\n%s", m.Dump())
		}
	})
}

// A queued message sent while Pi works is not steered at the tool
// boundary: it waits until Pi is idle, then wakes it. A passive one never
// wakes an idle Pi: the next request is the one a later steer starts.
func TestPiQueueWaitsPassiveNeverWakes(t *testing.T) {
	eachPi(t, func(t *testing.T, line PiLine) {
		w, peer := piWorld(t)
		dir := w.Project("queue")
		queued, passive, wake := marker("QUEUED"), marker("PASSIVE"), marker("WAKE")
		m := NewAnthropic(t)
		pi := w.StartPi("pi", dir, line, m, nil)
		target := pi.Session().ID
		m.Script(
			Turn{Calls: []Call{PiBash(fmt.Sprintf("intercom --session %s send --delivery queue %s %s && echo sent", peer.ID, target, queued))}},
			Turn{Text: "tool done"},
			Turn{If: func(r *Request) bool { return strings.Contains(lastUserText(r), queued) }, Text: "got the queued one"},
		)
		end := pi.Prompt("work")
		if r := m.Answered(1); r == nil || userCount(r, queued) != 0 {
			t.Errorf("the queued message was steered into the busy Pi at its tool boundary")
		}
		end = pi.AwaitEnd(end+1, msgTimeout)
		if r := m.Answered(2); r == nil || userCount(r, queued) != 1 {
			t.Fatalf("the queued message did not wake the idle Pi once\n%s", m.Dump())
		}

		before := len(m.Main())
		out := w.OK("--session", peer.ID, "--json", "send", "--delivery", "passive", target, passive)
		id := strings.SplitN(strings.TrimPrefix(out, `{"id":"`), `"`, 2)[0]
		Await(t, msgTimeout, func() bool { return strings.Contains(w.OK("trace", id), "pushed") }, "the passive message to reach Pi's holder")
		m.Script(Turn{If: func(r *Request) bool { return strings.Contains(lastUserText(r), wake) }, Text: "woken"})
		peer.Send(target, wake)
		pi.AwaitEnd(end+1, msgTimeout)
		main := m.Main()
		if len(main) <= before || userCount(main[before], wake) != 1 {
			t.Errorf("the first request after the passive message is not the steer's wake-up: the passive message woke Pi\n%s", m.Dump())
		}
	})
}

// A Pi killed before the tool boundary never gave its model the message
// that arrived during the tool: it is not acknowledged, and the resumed
// session (pi -c) gets it, once.
func TestPiKilledBeforeBoundaryGetsItOnResume(t *testing.T) {
	eachPi(t, func(t *testing.T, line PiLine) {
		w, peer := piWorld(t)
		dir := w.Project("crash")
		msg := marker("LOST")
		m := NewAnthropic(t)
		pi := w.StartPi("pi", dir, line, m, nil)
		target := pi.Session().ID
		m.Script(Turn{Calls: []Call{PiBash(pushedDuringTool(peer.ID, target, msg) + "; kill -9 $PPID")}})
		pi.Send(map[string]any{"type": "prompt", "message": "work"})
		pi.Wait(turnTimeout)
		if left := w.Pending(target); len(left) != 1 || !strings.Contains(left[0], msg) {
			t.Fatalf("the message the killed Pi never showed its model should still wait, got %q", left)
		}
		m.Script(Turn{If: func(r *Request) bool { return strings.Contains(lastUserText(r), msg) }, Text: "got it after the crash"})
		again := w.StartPi("pi2", dir, line, m, []string{"-c"})
		again.AwaitEnd(0, turnTimeout)
		if got := again.Session().ID; got != target {
			t.Errorf("the resumed Pi acts as %s, want %s", got, target)
		}
		r := m.Answered(1)
		if r == nil {
			t.Fatalf("the resumed Pi never got the message\n%s", m.Dump())
		}
		if n := userCount(r, msg); n != 1 {
			t.Errorf("the resumed Pi's model was shown %s %d times, want 1", msg, n)
		}
		if left := w.Pending(target); len(left) != 0 {
			t.Errorf("still waiting after the resumed model received it: %q", left)
		}
	})
}

// In the interactive TUI (tmux, extended keys), Alt+Shift+M sent as the
// CSI-u sequence a terminal sends (ESC[109;4u) opens the same compose
// flow as /intercom: arrows pick the session and the mode, Enter confirms,
// the typed text is sent as a Request Reply message.
func TestPiShortcutOpensCompose(t *testing.T) {
	eachPi(t, func(t *testing.T, line PiLine) {
		w := NewWorld(t)
		w.InstallPi()
		dir := w.Project("tui")
		near := w.StartPeerIn("near", dir)
		note := marker("TUI")
		tui := w.StartPiTUI("pi", dir, line, NewAnthropic(t))
		tui.AwaitScreen("intercom-package")
		Await(t, msgTimeout, func() bool { return len(w.SessionsIn(dir)) == 2 }, "Pi's session beside near")
		tui.Raw([]byte("\x1b[109;4u"))
		tui.AwaitScreen("message which session?")
		tui.Keys("Enter")
		tui.AwaitScreen("Request Reply")
		tui.Keys("Down", "Enter")
		tui.AwaitScreen("Request Reply to near")
		tui.Type(note)
		tui.Keys("Enter")
		ev := near.AwaitMessage(note, msgTimeout)
		if ev["expects_reply"] != true {
			t.Errorf("Request Reply from the shortcut's compose sent a plain message: %v", ev)
		}
		tui.AwaitScreen("intercom: sent to near")
	})
}

// Once, when another session works in the same project, the first run's
// system prompt carries the reference's presence hint; nothing is sent,
// and the next run does not repeat it.
func TestPiPresenceHintOnce(t *testing.T) {
	eachPi(t, func(t *testing.T, line PiLine) {
		w := NewWorld(t)
		w.InstallPi()
		dir := w.Project("presence")
		near := w.StartPeerIn("near", dir)
		m := NewAnthropic(t)
		m.Script(Turn{Text: "first"}, Turn{Text: "second"})
		pi := w.StartPi("pi", dir, line, m, nil)
		pi.Session()
		pi.Prompt("one")
		pi.Prompt("two")
		const hint = "Another intercom session is working in this repository"
		first, second := m.Answered(0), m.Answered(1)
		if first == nil || second == nil {
			t.Fatalf("two runs, two requests expected\n%s", m.Dump())
		}
		if !strings.Contains(systemText(first), hint) {
			t.Errorf("the first run's system prompt has no presence hint\n%s", m.Dump())
		}
		if strings.Contains(systemText(second), hint) {
			t.Errorf("the second run's system prompt repeats the presence hint")
		}
		if n := len(near.Events()); n != 1 {
			t.Errorf("the presence hint sent something: near has %d events", n)
		}
	})
}

// confirmSend asks before a non-reply send (declined: nothing is sent,
// the model is told); askTimeoutMs bounds an ask nobody answers.
func TestPiConfirmSendAndAskTimeout(t *testing.T) {
	eachPi(t, func(t *testing.T, line PiLine) {
		w, peer := piWorld(t)
		if err := os.WriteFile(filepath.Join(w.IntercomHome, "config.json"), []byte(`{"confirmSend":true,"askTimeoutMs":1500}`), 0o600); err != nil {
			t.Fatal(err)
		}
		dir := w.Project("confirm")
		declined, asked := marker("DECLINED"), marker("ASKED")
		m := NewAnthropic(t)
		m.Script(
			Turn{Calls: []Call{{Name: "load_intercom", Args: map[string]any{}}}},
			Turn{Calls: []Call{PiIntercom(map[string]any{"action": "send", "to": "peer", "message": declined})}},
			Turn{If: func(r *Request) bool { return strings.Contains(lastUserText(r), "Not sent") },
				Calls: []Call{PiIntercom(map[string]any{"action": "ask", "to": "peer", "message": asked})}},
			Turn{If: func(r *Request) bool { return strings.Contains(lastUserText(r), "No reply from") }, Text: "gave up"},
		)
		pi := w.StartPi("pi", dir, line, m, nil)
		pi.Session()
		from := len(pi.Events())
		pi.Send(map[string]any{"type": "prompt", "message": "talk to the peer"})
		i := pi.AwaitUI(from, "confirm")
		pi.Send(map[string]any{"type": "extension_ui_response", "id": pi.Events()[i]["id"], "confirmed": false})
		pi.AwaitEnd(i, turnTimeout)
		if peer.Messages(declined) != 0 {
			t.Errorf("a declined send reached the peer")
		}
		peer.AwaitMessage(asked, msgTimeout)
		if r := m.Answered(3); r == nil || !strings.Contains(lastUserText(r), "1.5s") {
			t.Errorf("the ask did not end at askTimeoutMs (1.5s)\n%s", m.Dump())
		}
	})
}

// A Pi supervisor that started a run with agent-runs (from its bash tool,
// as its session) and went idle is woken by the run's completion notice.
func TestPiSupervisorWokenByRunCompletion(t *testing.T) {
	eachPi(t, func(t *testing.T, line PiLine) {
		w := NewWorld(t)
		w.InstallPi()
		dir := w.Project("supervisor")
		idle := filepath.Join(w.Root, "supervisor-idle")
		m := NewAnthropic(t)
		m.Script(
			Turn{Calls: []Call{PiBash(agentRunsBin(t) + " start --agent helper -- /bin/sh -c 'until [ -e " + idle + " ]; do sleep 0.1; done; echo helper-finished'")}},
			Turn{Text: "started the helper"},
			Turn{If: func(r *Request) bool {
				return strings.Contains(lastUserText(r), "helper") && strings.Contains(lastUserText(r), "completed")
			},
				Text: "the helper is done"},
		)
		pi := w.StartPi("pi", dir, line, m, nil)
		pi.Session()
		end := pi.Prompt("start a helper run")
		if err := os.WriteFile(idle, nil, 0o600); err != nil { // the helper finishes now
			t.Fatal(err)
		}
		pi.AwaitEnd(end+1, turnTimeout)
		if r := m.Answered(2); r == nil {
			t.Fatalf("the run's completion notice did not wake the idle Pi supervisor\n%s", m.Dump())
		}
	})
}
