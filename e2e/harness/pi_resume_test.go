//go:build harness

package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An ask the model was shown (so acknowledged: never pushed again) and has
// not answered is a recovered reply obligation when Pi resumes: the broker
// keeps an ask pending while its target is away for the resume grace
// (askResumeGraceMs, a minute), so the resumed Pi's `intercom pending`
// lists it, its first request already offers the intercom tool without
// load_intercom, and the model's reply answers the asker, still waiting.
func TestPiRecoveredAskEnablesIntercom(t *testing.T) {
	eachPi(t, func(t *testing.T, line PiLine) {
		w := NewWorld(t)
		// A grace as long as the ask, so a slow restart is no failure.
		if err := os.WriteFile(filepath.Join(w.IntercomHome, "config.json"), []byte(`{"askResumeGraceMs":600000}`), 0o600); err != nil {
			t.Fatal(err)
		}
		w.InstallPi()
		peer := w.StartPeer("peer")
		dir := w.Project("recovered")
		q, a := marker("Q-RECOVERED"), marker("A-RECOVERED")
		m := NewAnthropic(t)
		m.Script(Turn{If: func(r *Request) bool { return strings.Contains(lastUserText(r), q) }, Text: "later"})
		pi := w.StartPi("pi", dir, line, m, nil)
		target := pi.Session().ID
		asked := w.startAgent("ask", w.Root, nil, nil, false, filepath.Join(binDir, "intercom"),
			"--session", peer.ID, "--json", "ask", "--timeout", "10m", target, q)
		pi.AwaitEnd(0, turnTimeout)
		Await(t, msgTimeout, func() bool { return len(w.Pending(target)) == 0 }, "the ask the model was shown to be acknowledged")
		_ = pi.stdin.Close() // pi --mode rpc ends with its stdin
		pi.Wait(turnTimeout)

		m.Script(
			Turn{Calls: []Call{PiIntercom(map[string]any{"action": "reply", "message": a})}},
			Turn{Text: "replied"},
		)
		again := w.StartPi("pi2", dir, line, m, []string{"-c"})
		if got := again.Session().ID; got != target {
			t.Fatalf("pi -c acts as %s, want %s", got, target)
		}
		again.Prompt("go on")
		first := m.Answered(1)
		if first == nil || !offers(first, "intercom") {
			t.Fatalf("the resumed Pi's first request did not offer the intercom tool\n%s", m.Dump())
		}
		if userCount(first, q) != 1 {
			t.Errorf("the resumed Pi's first request shows the ask %d times, want once (from the saved session)", userCount(first, q))
		}
		if code := asked.Wait(msgTimeout); code != 0 || !strings.Contains(asked.Log(), a) {
			t.Fatalf("the ask exited %d without the reply\n%s\n%s", code, asked.Log(), m.Dump())
		}
		if left := w.Intercom("", nil, "--session", target, "--json", "pending"); strings.Contains(left.Stdout, q) {
			t.Errorf("the answered ask is still pending: %s", left.Stdout)
		}
	})
}

// `pi --session <Pi session id>` resumes that Pi session, not the latest
// one (what -c would take): the same intercom session, with the mail that
// arrived while it was not running, which wakes it and reaches the model
// once.
func TestPiSessionFlagKeepsSessionAndMail(t *testing.T) {
	eachPi(t, func(t *testing.T, line PiLine) {
		w, peer := piWorld(t)
		dir := w.Project("session-flag")
		mail := marker("MAIL")
		m := NewAnthropic(t)
		m.Script(Turn{Text: "first run"})
		w.RunPiOnce("pi", dir, line, m, "hello", nil)
		before := w.AgentSession(dir, "")
		m.Script(Turn{Text: "a later session"})
		w.RunPiOnce("pi-later", dir, line, m, "hello again", nil)
		Await(t, msgTimeout, func() bool {
			n := 0
			for _, s := range w.SessionsIn(dir) {
				if !s.Connected {
					n++
				}
			}
			return n == 2
		}, "both one-shot Pi sessions to disconnect")
		peer.Send(before.ID, mail)
		m.Script(Turn{If: func(r *Request) bool { return strings.Contains(lastUserText(r), mail) }, Text: "read the mail"})
		pi := w.StartPi("pi2", dir, line, m, []string{"--session", strings.TrimPrefix(before.ID, "pi-")})
		pi.AwaitEnd(0, turnTimeout)
		Await(t, msgTimeout, func() bool {
			for _, s := range w.SessionsIn(dir) {
				if s.ID == before.ID {
					return s.Connected
				}
			}
			return false
		}, "pi --session to act as the resumed %s", before.ID)
		receivedOnce(t, w, m, 2, before.ID, mail, "the resumed Pi's mail")
	})
}
