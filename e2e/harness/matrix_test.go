//go:build harness

package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The cross-harness matrix: Claude Code, Codex, Pi, Gemini CLI and
// OpenCode, installed for one user on one broker, each send to each other
// one (20 ordered pairs) through the sender's own shell tool, and each
// message reaches the receiving model exactly once (its stand-in's recorded
// requests). Then one ask/reply crosses from each harness to the next in a
// ring (Claude Code → Codex → Pi → Gemini CLI → OpenCode → Claude Code),
// asked and answered through each one's intercom tool. The result table
// is logged and written to matrix.md in the test's artifact directory
// (go test -artifacts).
func TestCrossHarnessMatrix(t *testing.T) {
	line := currentPi(t)
	w := NewWorld(t)
	ocModel := NewChatCompletions(t)
	w.InstallClaude()
	w.InstallCodex()
	w.InstallPi()
	w.InstallGemini()
	w.InstallOpenCode(ocModel)
	start := time.Now()

	// One agent per harness, each in its own project; the first turns run
	// side by side.
	agents := []*mxAgent{mxClaude(t, w), mxCodex(t, w), mxPi(t, w, line), mxGemini(t, w), mxOpenCode(t, w, ocModel)}
	hello := make([]int, len(agents))
	for i, a := range agents {
		p := marker("HELLO-" + a.short)
		hello[i] = a.script(p, Turn{Text: "ready"})
		a.start(p)
	}
	for i, a := range agents {
		a.await(t, hello[i])
		if a.id == "" {
			a.id = w.AgentSession(a.dir, a.hid).ID
		}
	}

	// Every agent sends one message to every other one from its shell, all
	// five at once.
	mark := map[[2]int]string{}
	sends := make([]int, len(agents))
	for i, a := range agents {
		var cmd []string
		for j, b := range agents {
			if i != j {
				mark[[2]int{i, j}] = marker("M-" + a.short + "-TO-" + b.short)
				cmd = append(cmd, "intercom send "+b.id+" "+mark[[2]int{i, j}])
			}
		}
		p := marker("SEND-" + a.short)
		sends[i] = a.script(p, Turn{Calls: []Call{a.shell(strings.Join(cmd, " && "))}}, Turn{Text: "sent all four"})
		a.start(p)
	}
	for i, a := range agents {
		a.await(t, sends[i])
	}

	// Each takes one more turn with a tool call: what was still waiting
	// arrives, and what came before must not come again.
	finals := make([]int, len(agents))
	for i, a := range agents {
		p := marker("CHECK-" + a.short)
		finals[i] = a.script(p, Turn{Calls: []Call{a.shell("echo " + marker("CHECKED"))}}, Turn{Text: "checked"})
		a.start(p)
	}
	for i, a := range agents {
		a.await(t, finals[i])
	}
	cells := map[[2]int]string{}
	pass := 0
	for j, b := range agents {
		var want []string
		for i := range agents {
			if i != j {
				want = append(want, mark[[2]int{i, j}])
			}
		}
		b.awaitShown(want, msgTimeout)
		for i, a := range agents {
			if i == j {
				continue
			}
			cell, ok := b.once(mark[[2]int{i, j}])
			cells[[2]int{i, j}] = cell
			if ok {
				pass++
			} else {
				t.Errorf("%s → %s: the receiving model saw %s: %s", a.name, b.name, mark[[2]int{i, j}], cell)
			}
		}
	}
	pairsTook := time.Since(start)

	// The ask/reply ring.
	var ring []string
	for i, a := range agents {
		b := agents[(i+1)%len(agents)]
		ring = append(ring, askReply(t, w, a, b))
	}
	report := matrixReport(agents, cells, pass, ring, pairsTook, time.Since(start))
	t.Log("\n" + report)
	if err := os.WriteFile(filepath.Join(t.ArtifactDir(), "matrix.md"), []byte(report), 0o644); err != nil {
		t.Error(err)
	}
}

// askReply makes a ask b through a's intercom tool and b answer through
// its own; both models must see what came to them exactly once. An idle
// long-lived b is woken by the ask; a one-shot b is in a turn when the ask
// arrives (asks need the peer connected) and gets it at its tool boundary.
func askReply(t *testing.T, w *World, a, b *mxAgent) string {
	t.Helper()
	q, ans := marker("Q-"+a.short+"-TO-"+b.short), marker("A-"+b.short+"-TO-"+a.short)
	ask := map[string]any{"action": "ask", "to": b.id, "message": q}
	if a.short != "OC" { // OpenCode's plugin tool has no delivery argument
		ask["delivery"] = "steer"
	}
	var asking []Turn
	if a.short == "PI" { // Pi offers the intercom tool once loaded
		asking = append(asking, Turn{Calls: []Call{{Name: "load_intercom", Args: map[string]any{}}}})
	}
	asking = append(asking,
		Turn{Calls: []Call{a.tool(ask)}},
		Turn{If: func(r *Request) bool { return r.Contains(ans) }, Text: "got the reply"})
	askPrompt := marker("ASK-" + b.short)
	// The reply names the ask, as the hint shown with it says (Pi's
	// extension refuses a bare reply while it has not recorded the ask).
	replyArgs := map[string]any{"action": "reply", "message": ans}
	reply := Turn{If: func(r *Request) bool { return r.Contains(q) }, Before: func(r *Request) {
		if m := replyHint.FindStringSubmatch(r.Text()); m != nil {
			replyArgs["to"] = m[1]
		}
	}, Calls: []Call{b.tool(replyArgs)}}

	asked := a.script(askPrompt, asking...)
	if b.wakes {
		replied := b.m.Script(reply, Turn{Text: "replied"}) + 1
		a.start(askPrompt)
		a.await(t, asked)
		b.await(t, replied)
	} else {
		// b's turn asks a to ask, and goes on to a tool call once the ask
		// waits for it.
		bPrompt := marker("AWAIT-" + a.short)
		replied := b.script(bPrompt,
			Turn{Before: func(*Request) {
				a.start(askPrompt)
				if !w.awaitPending(b.id, q, msgTimeout) {
					t.Errorf("%s's ask never reached %s's inbox", a.name, b.name)
				}
			}, Calls: []Call{b.shell("echo " + marker("ASKED"))}},
			reply, Turn{Text: "replied"})
		b.start(bPrompt)
		b.await(t, replied)
		a.await(t, asked)
	}
	qs, qok := b.once(q)
	as, aok := a.once(ans)
	if !qok || !aok {
		t.Errorf("%s asks %s: the question reached %s's model %s, the answer reached %s's model %s", a.name, b.name, b.name, qs, a.name, as)
		return fmt.Sprintf("- %s → %s: FAIL (question: %s; answer: %s)", a.name, b.name, qs, as)
	}
	return fmt.Sprintf("- %s asks %s, %s replies: ok (the question and the answer each seen once)", a.name, b.name, b.name)
}

// replyHint is the reply call the hint shown with an ask spells out.
var replyHint = regexp.MustCompile(`action: "reply", to: "(m[0-9a-f]+)"`)

// matrixReport renders the 5×5 table and the ring.
func matrixReport(agents []*mxAgent, cells map[[2]int]string, pass int, ring []string, pairs, all time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Cross-harness matrix: %d of %d ordered pairs seen exactly once by the receiving model\n\n", pass, len(agents)*(len(agents)-1))
	b.WriteString("| from \\ to |")
	for _, a := range agents {
		fmt.Fprintf(&b, " %s |", a.name)
	}
	b.WriteString("\n|---|")
	b.WriteString(strings.Repeat("---|", len(agents)))
	b.WriteString("\n")
	for i, a := range agents {
		fmt.Fprintf(&b, "| %s |", a.name)
		for j := range agents {
			cell := "—"
			if i != j {
				cell = cells[[2]int{i, j}]
			}
			fmt.Fprintf(&b, " %s |", cell)
		}
		b.WriteString("\n")
	}
	b.WriteString("\nAsk/reply ring (each through the asker's and the replier's intercom tool):\n\n")
	b.WriteString(strings.Join(ring, "\n"))
	if strings.Contains(b.String(), notKept) {
		b.WriteString("\n\n¹ Shown once, in the run that delivered it: Gemini CLI's hook context is \"for this turn only\", so a resumed chat (gemini -r) no longer holds it.")
	}
	fmt.Fprintf(&b, "\n\nThe 20 pairs took %s, with the ring %s (after install).\n", pairs.Round(time.Second), all.Round(time.Second))
	return b.String()
}
