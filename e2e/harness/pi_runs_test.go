//go:build harness

package harness

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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

// A Pi child started with `agent-runs start` has contact_supervisor (a
// plain Pi has not): progress_update steers and returns at once;
// need_decision persists the question, steers it to the supervisor, blocks
// without the ask timeout, and returns the supervisor's reply as the tool
// result, whether the supervisor replies or answers with agent-runs answer.
func TestPiChildContactsSupervisor(t *testing.T) {
	eachPi(t, func(t *testing.T, line PiLine) {
		w := NewWorld(t)
		w.InstallPi()
		boss := w.StartPeer("boss")
		dir := w.Project("child")
		question, answer := marker("DECIDE"), marker("ANSWER")
		m := NewAnthropic(t)
		progress, question2, answer2 := marker("PROGRESS"), marker("DECIDE-AGAIN"), marker("ANSWER-AGAIN")
		m.Script(
			Turn{Calls: []Call{{Name: "contact_supervisor", Args: map[string]any{"reason": "progress_update", "message": progress}}}},
			Turn{If: func(r *Request) bool { return strings.Contains(lastUserText(r), "Progress update accepted") },
				Calls: []Call{{Name: "contact_supervisor", Args: map[string]any{"reason": "need_decision", "message": question}}}},
			Turn{If: func(r *Request) bool { return strings.Contains(lastUserText(r), answer) },
				Calls: []Call{{Name: "contact_supervisor", Args: map[string]any{"reason": "need_decision", "message": question2}}}},
			Turn{If: func(r *Request) bool { return strings.Contains(lastUserText(r), answer2) }, Text: "decided"},
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
		// The second question, answered with agent-runs answer.
		boss.AwaitMessage(question2, turnTimeout)
		var page struct {
			Questions []struct {
				ID      string `json:"id"`
				RunID   string `json:"run_id"`
				State   string `json:"state"`
				Preview string `json:"preview"`
			} `json:"questions"`
		}
		var qid, rid string
		Await(t, msgTimeout, func() bool {
			r := w.runCmd(dir, "--supervisor", boss.ID, "--json", "questions")
			_ = json.Unmarshal([]byte(r), &page)
			for _, q := range page.Questions {
				if q.State == "awaiting_input" && strings.Contains(q.Preview, question2) {
					qid, rid = q.ID, q.RunID
					return true
				}
			}
			return false
		}, "the second question among the run's questions")
		w.runCmd(dir, "--supervisor", boss.ID, "answer", rid, "--question-id", qid, answer2)
		if code := run.Wait(turnTimeout); code != 0 {
			t.Fatalf("agent-runs start --wait exited %d\n%s", code, tailLines(run.Log(), 30))
		}
		if r := m.Answered(2); r == nil || !strings.Contains(lastUserText(r), "Reply from supervisor: "+answer) {
			t.Errorf("contact_supervisor did not return the supervisor's reply\n%s", m.Dump())
		}
		if r := m.Answered(3); r == nil || !strings.Contains(lastUserText(r), "Reply from supervisor: "+answer2) {
			t.Errorf("contact_supervisor did not return the agent-runs answer\n%s", m.Dump())
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

// Inside a run (agent-runs start -- pi -p …) the run's owner holds the
// child's session; a steer the supervisor sends while the child's tool
// runs reaches the child's model at that tool boundary, once, and is not
// left waiting.
func TestPiChildGetsSteerAtToolBoundary(t *testing.T) {
	eachPi(t, func(t *testing.T, line PiLine) {
		w := NewWorld(t)
		w.InstallPi()
		boss := w.StartPeer("boss")
		dir := w.Project("child-steer")
		steer := marker("STEER")
		m := NewAnthropic(t)
		child := make(chan string, 1)
		m.Script(
			Turn{Calls: []Call{PiBash(fmt.Sprintf(`echo "$INTERCOM_SESSION" > %s/child-session && intercom --session %s send "$INTERCOM_SESSION" %s && echo sent`, w.Root, boss.ID, steer))}},
			Turn{If: func(r *Request) bool { return strings.Contains(lastUserText(r), "sent") }, Before: func(*Request) {
				data, _ := os.ReadFile(filepath.Join(w.Root, "child-session"))
				child <- strings.TrimSpace(string(data))
			}, Text: "steered"},
		)
		argv := append([]string{agentRunsBin(t), "--supervisor", boss.ID, "start", "--agent", "worker", "--wait", "--"},
			line.argv("-p", "--model", w.piModel("child", m), "work")...)
		run := w.startAgent("agent-runs", dir, m, piEnv(nil), false, argv...)
		if code := run.Wait(turnTimeout); code != 0 {
			t.Fatalf("agent-runs start --wait exited %d\n%s", code, tailLines(run.Log(), 30))
		}
		r := m.Answered(1)
		if r == nil {
			t.Fatalf("the child's model never got the request after its tool\n%s", m.Dump())
		}
		if n := userCount(r, steer); n != 1 {
			t.Errorf("the request after the child's tool shows the steer %d times, want 1\n%s", n, m.Dump())
		}
		if left := w.Pending(<-child); len(left) != 0 {
			t.Errorf("the steer still waits for the child after its model got it: %q", left)
		}
	})
}

// contact_supervisor interview_request from a Pi child persists the
// interview, blocks until the supervisor answers, and returns the answer
// with its structured responses ({"responses":[{id,value}]}) as the text
// the model reads.
func TestPiChildInterviewStructuredReply(t *testing.T) {
	eachPi(t, func(t *testing.T, line PiLine) {
		w := NewWorld(t)
		w.InstallPi()
		boss := w.StartPeer("boss")
		dir := w.Project("interview")
		note := marker("INTERVIEW")
		interview := map[string]any{"title": "Before I migrate", "questions": []any{
			map[string]any{"id": "db", "type": "single", "question": "Which database?", "options": []any{"postgres", "sqlite"}},
			map[string]any{"id": "why", "type": "text", "question": "Why?"},
		}}
		const answer = `{"responses":[{"id":"db","value":"postgres"},{"id":"why","value":"it is what production runs"}]}`
		m := NewAnthropic(t)
		m.Script(
			Turn{Calls: []Call{{Name: "contact_supervisor", Args: map[string]any{"reason": "interview_request", "message": note, "interview": interview}}}},
			Turn{If: func(r *Request) bool { return strings.Contains(lastUserText(r), "Structured responses") }, Text: "migrating to postgres"},
		)
		argv := append([]string{agentRunsBin(t), "--supervisor", boss.ID, "start", "--agent", "worker", "--wait", "--"},
			line.argv("-p", "--model", w.piModel("child", m), "migrate")...)
		run := w.startAgent("agent-runs", dir, m, piEnv(nil), false, argv...)
		ev := boss.AwaitMessage(note, turnTimeout)
		if text, _ := ev["text"].(string); !strings.Contains(text, "Which database?") {
			t.Errorf("the supervisor's message does not show the interview's questions: %q", text)
		}
		if r := w.Intercom("", nil, "--session", boss.ID, "reply", answer); r.Code != 0 {
			t.Fatalf("supervisor reply: exit %d: %s", r.Code, r.Stderr)
		}
		if code := run.Wait(turnTimeout); code != 0 {
			t.Fatalf("agent-runs start --wait exited %d\n%s", code, tailLines(run.Log(), 30))
		}
		r := m.Answered(1)
		if r == nil {
			t.Fatalf("the interview's answer never reached the child's model\n%s", m.Dump())
		}
		got := lastUserText(r)
		for _, want := range []string{"Reply from supervisor: ", `Structured responses: [{"id":"db","value":"postgres"},{"id":"why","value":"it is what production runs"}]`} {
			if !strings.Contains(got, want) {
				t.Errorf("the tool result the child's model read lacks %q:\n%s", want, got)
			}
		}
	})
}
