//go:build harness

package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

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

// In the interactive TUI (tmux, extended keys), Alt+Shift+M sent as the
// CSI-u sequence a terminal sends (ESC[109;4u) opens the same flow as
// /intercom: the arrows and Enter pick the session, then the compose
// overlay takes the text, Tab toggles Send / Request Reply, Enter sends.
func TestPiShortcutOpensCompose(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not on PATH: the TUI test needs it")
	}
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
		tui.AwaitScreen("intercom → near  [Send]")
		tui.Type(note)
		tui.AwaitScreen("> " + note)
		tui.Keys("Tab")
		tui.AwaitScreen("intercom → near  [Request Reply]")
		tui.Keys("Enter")
		ev := near.AwaitMessage(note, msgTimeout)
		if ev["expects_reply"] != true {
			t.Errorf("Request Reply from the shortcut's compose sent a plain message: %v", ev)
		}
		tui.AwaitScreen("intercom: sent to near")
	})
}

// Esc in the TUI compose overlay cancels it: the overlay closes and the
// typed text is never sent. The shortcut then opens the flow again, and the
// message composed then is the only one near gets.
func TestPiComposeEscCancels(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not on PATH: the TUI test needs it")
	}
	eachPi(t, func(t *testing.T, line PiLine) {
		w := NewWorld(t)
		w.InstallPi()
		dir := w.Project("tui-esc")
		near := w.StartPeerIn("near", dir)
		dropped, sent := marker("DROPPED"), marker("SENT")
		tui := w.StartPiTUI("pi", dir, line, NewAnthropic(t))
		tui.AwaitScreen("intercom-package")
		Await(t, msgTimeout, func() bool { return len(w.SessionsIn(dir)) == 2 }, "Pi's session beside near")
		for _, text := range []string{dropped, sent} {
			tui.Raw([]byte("\x1b[109;4u"))
			tui.AwaitScreen("message which session?")
			tui.Keys("Enter")
			tui.AwaitScreen("intercom → near  [Send]")
			tui.Type(text)
			tui.AwaitScreen("> " + text)
			if text == dropped {
				tui.Keys("Escape")
				tui.AwaitScreenWithout("> " + text) // the overlay closed
			} else {
				tui.Keys("Enter")
			}
		}
		near.AwaitMessage(sent, msgTimeout)
		tui.AwaitScreen("intercom: sent to near")
		if n := near.Messages(dropped); n != 0 {
			t.Errorf("the compose cancelled with Esc sent its text %d times", n)
		}
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

// replyHint false: a Request Reply message reaches Pi's model without the
// reply hint (the default shows it: TestPiAndClaudeAskEachOther).
func TestPiReplyHintOff(t *testing.T) {
	eachPi(t, func(t *testing.T, line PiLine) {
		w, peer := piWorld(t)
		if err := os.WriteFile(filepath.Join(w.IntercomHome, "config.json"), []byte(`{"replyHint":false}`), 0o600); err != nil {
			t.Fatal(err)
		}
		dir := w.Project("nohint")
		q := marker("QUESTION")
		m := NewAnthropic(t)
		m.Script(Turn{If: func(r *Request) bool { return strings.Contains(lastUserText(r), q) }, Text: "seen"})
		pi := w.StartPi("pi", dir, line, m, nil)
		target := pi.Session().ID
		w.OK("--session", peer.ID, "send", "--request-reply", target, q)
		pi.AwaitEnd(0, turnTimeout)
		r := m.Answered(0)
		if r == nil {
			t.Fatalf("the message did not wake Pi\n%s", m.Dump())
		}
		if strings.Contains(lastUserText(r), `intercom({ action: "reply"`) {
			t.Errorf("replyHint false, yet the model was shown the reply hint")
		}
	})
}
