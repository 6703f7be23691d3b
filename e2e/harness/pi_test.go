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

// receivedOnce fails unless the request answered by scripted turn i showed
// the model text exactly once and nothing waits for session target any
// more (it was acknowledged once received).
func receivedOnce(t *testing.T, w *World, m *Model, i int, target, text, what string) {
	t.Helper()
	r := m.Answered(i)
	if r == nil {
		t.Fatalf("%s: never reached the model\n%s", what, m.Dump())
	}
	if n := userCount(r, text); n != 1 {
		t.Errorf("%s: the model was shown %s %d times, want 1", what, text, n)
	}
	if left := w.Pending(target); len(left) != 0 {
		t.Errorf("%s: still waiting after the model received it: %q", what, left)
	}
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
		receivedOnce(t, w, m, 1, target, wake, "the idle Pi woken by a steer")
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
		receivedOnce(t, w, m, 1, before.ID, mail, "the resumed Pi's mail")
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
		receivedOnce(t, w, m, 1, target, msg, "the message the killed Pi never showed")
	})
}
