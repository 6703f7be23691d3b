//go:build harness

package harness

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// mxAgent is one harness of the cross-harness matrix: a live agent (or a
// resumable one-shot chat) in its own project, against its own stand-in.
type mxAgent struct {
	name  string // as the table shows it
	short string // for markers
	m     *Model
	dir   string
	id    string // its intercom session
	hid   string // the harness's own session id (resolved to id after the first turn)
	shell func(command string) Call
	tool  func(args map[string]any) Call
	// wakes: an idle agent is woken by a message (a long-lived session);
	// a one-shot run is not, it gets its mail at its next run.
	wakes bool
	// start begins a turn with prompt. For the long-lived harnesses it only
	// writes to the harness (safe off the test goroutine, in a Before).
	start func(prompt string)
	// end waits for what start began to exit, exited says whether it has
	// (one-shot runs only).
	end    func()
	exited func() bool
}

// turn scripts turns for a's model (the first waits for the request that
// carries prompt, so a wake-up in between does not take it), starts the
// turn and waits until the last scripted turn was answered.
func (a *mxAgent) turn(t *testing.T, prompt string, turns ...Turn) {
	t.Helper()
	last := a.script(prompt, turns...)
	a.start(prompt)
	a.await(t, last)
}

// script appends turns, the first gated on prompt, and returns the index
// of the last.
func (a *mxAgent) script(prompt string, turns ...Turn) int {
	if turns[0].If == nil {
		turns[0].If = func(r *Request) bool { return r.Contains(prompt) }
	}
	return a.m.Script(turns...) + len(turns) - 1
}

// await waits until scripted turn i was answered, then for a one-shot run
// to exit.
func (a *mxAgent) await(t *testing.T, i int) {
	t.Helper()
	Await(t, turnTimeout, func() bool { return a.m.Answered(i) != nil || (a.exited != nil && a.exited()) }, "%s to reach its scripted turn %d", a.name, i)
	if a.end != nil {
		a.end()
	}
	if a.m.Answered(i) == nil {
		t.Fatalf("%s ended before its scripted turn %d; requests the script did not answer:\n%s\nall requests:\n%s", a.name, i, a.unscripted(), a.m.Dump())
	}
}

// unscripted lists a's requests that got the stand-in's default answer,
// each with the end of what it carried (a tool's result, a hook's text):
// what made the harness ask the model more than the script planned.
func (a *mxAgent) unscripted() string {
	var b strings.Builder
	for _, r := range a.m.Main() {
		if r.Answered >= 0 {
			continue
		}
		text := r.Text()
		fmt.Fprintf(&b, "- request %d ends: %q\n", r.N, text[max(0, len(text)-400):])
	}
	return b.String()
}

// deliveries is how many times a's model was newly shown s (a request
// holding it after one that did not), most the most times one request
// held it, and kept whether its latest request still holds it.
func (a *mxAgent) deliveries(s string) (n, most int, kept bool) {
	prev := 0
	for _, r := range a.m.Main() {
		c := r.Count(s)
		if c > 0 && prev == 0 {
			n++
		}
		most, prev = max(most, c), c
	}
	return n, most, prev > 0
}

// awaitShown waits (without failing) until a's model was shown every
// marker of all.
func (a *mxAgent) awaitShown(all []string, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		ch := a.m.Changed()
		ok := true
		for _, s := range all {
			n, _, _ := a.deliveries(s)
			ok = ok && n > 0
		}
		if ok {
			return
		}
		select {
		case <-ch:
		case <-time.After(time.Second):
		}
	}
}

// notKept marks a message the model saw once that a later turn's context
// no longer holds (Gemini CLI's hook context is for the turn that got it).
const notKept = "ok¹"

// once is "ok" when a's model was shown s exactly once (never twice in
// one request, never again later), else what it saw.
func (a *mxAgent) once(s string) (string, bool) {
	n, most, kept := a.deliveries(s)
	switch {
	case n == 1 && most == 1 && kept:
		return "ok", true
	case n == 1 && most == 1:
		return notKept, true
	}
	return fmt.Sprintf("FAIL (shown %d times, at most %d in one request)", n, most), false
}

// mxClaude is Claude Code, one stream-json session for the whole test.
func mxClaude(t *testing.T, w *World) *mxAgent {
	m := NewAnthropic(t)
	c := w.StartClaude("claude", w.Project("claude"), m)
	a := &mxAgent{name: "Claude Code", short: "CC", m: m, dir: c.Dir, shell: Bash, tool: ClaudeIntercom, wakes: true}
	a.start = func(prompt string) {
		msg := map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": prompt}}
		if _, err := fmt.Fprintln(c.stdin, mustJSON(msg)); err != nil {
			t.Errorf("claude: write prompt: %v", err)
		}
	}
	a.hid = c.SessionID
	t.Cleanup(func() { noHookFailed(t, c) })
	return a
}

// currentPi is the current Pi line (1.x), installed; the test is skipped,
// with one line, when it cannot be.
func currentPi(t *testing.T) PiLine {
	t.Helper()
	lines, skip, err := installPi()
	if skip != "" {
		t.Skip("pi not installed:", skip)
	}
	if err != nil {
		t.Fatal(err)
	}
	return lines[0]
}

// mxPi is Pi 1.x, one `pi --mode rpc` for the whole test; a prompt while
// it works (a wake-up) follows up when it stops.
func mxPi(t *testing.T, w *World, line PiLine) *mxAgent {
	m := NewAnthropic(t)
	p := w.StartPi("pi", w.Project("pi"), line, m, nil)
	a := &mxAgent{name: "Pi", short: "PI", m: m, dir: p.Dir, shell: PiBash, tool: PiIntercom, wakes: true}
	a.start = func(prompt string) {
		cmd := map[string]any{"type": "prompt", "message": prompt, "streamingBehavior": "followUp"}
		if _, err := fmt.Fprintf(p.stdin, "%s\n", mustJSON(cmd)); err != nil {
			t.Errorf("pi: write prompt: %v", err)
		}
	}
	return a
}

// mxOpenCode is OpenCode, one `opencode serve` and one session in it.
func mxOpenCode(t *testing.T, w *World, m *Model) *mxAgent {
	oc := w.ServeOpenCode("opencode", w.Project("opencode"), m)
	ses := oc.NewSession()
	a := &mxAgent{name: "OpenCode", short: "OC", m: m, dir: oc.Dir, id: intercomSession(ses), shell: OpenCodeBash, tool: OpenCodeIntercom, wakes: true}
	a.start = func(prompt string) { oc.PromptAsync(ses, prompt) }
	return a
}

// mxCodex is Codex: `codex exec` for the first turn, `codex exec resume
// THREAD` for every later one.
func mxCodex(t *testing.T, w *World) *mxAgent {
	m := NewResponses(t)
	a := &mxAgent{name: "Codex", short: "CX", m: m, dir: w.Project("codex"), shell: Shell, tool: CodexIntercom}
	var thread string
	var run *Codex
	a.start = func(prompt string) {
		var flags []string
		if thread != "" {
			flags = []string{"resume", thread}
		}
		run = w.StartCodex("codex", a.dir, m, prompt, flags...)
	}
	a.exited = func() bool { return exitedAgent(run.Agent) }
	a.end = func() {
		run.Finish(turnTimeout)
		if thread == "" {
			thread = run.ThreadID()
			a.hid = thread
		}
	}
	return a
}

// mxGemini is Gemini CLI: `gemini -p --session-id ID` for the first turn,
// `gemini -p -r ID` for every later one.
func mxGemini(t *testing.T, w *World) *mxAgent {
	m := NewGemini(t)
	id := newUUID()
	a := &mxAgent{name: "Gemini CLI", short: "GM", m: m, dir: w.Project("gemini"), hid: id, shell: GeminiShell, tool: GeminiIntercom}
	flag := "--session-id"
	var run *Gemini
	a.start = func(prompt string) {
		run = w.RunGemini("gemini", a.dir, m, prompt, nil, flag, id)
		flag = "-r"
	}
	a.exited = func() bool { return exitedAgent(run.Agent) }
	a.end = func() {
		run.Finish(turnTimeout)
		for _, l := range run.Noise() {
			t.Errorf("gemini showed hook noise: %s", l)
		}
	}
	return a
}

// exitedAgent reports whether the process of a has ended.
func exitedAgent(a *Agent) bool {
	select {
	case <-a.done:
		return true
	default:
		return false
	}
}

// pendingHolds reports whether text waits in session id's inbox (peeked,
// nothing acknowledged); safe off the test goroutine.
func (w *World) pendingHolds(id, text string) bool {
	r := w.Intercom("", nil, "--session", id, "--json", "inbox", "--peek")
	return r.Code == 0 && strings.Contains(r.Stdout, text)
}

// awaitPending waits (without failing) until text waits for session id.
func (w *World) awaitPending(id, text string, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for !w.pendingHolds(id, text) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
	return true
}
