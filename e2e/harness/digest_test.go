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

// A burst of 50 peer messages reaching a busy Claude Code agent comes to
// its model as digests, one per tool boundary, each within the configured
// budget (digestBytes) and saying how many more wait; every message
// reaches the model exactly once (docs/concepts.md, "Attention: digests
// and wake budget").
func TestClaudeBurstArrivesAsDigests(t *testing.T) {
	w, peer := claudeWorld(t)
	if err := os.WriteFile(filepath.Join(w.IntercomHome, "config.json"), []byte(`{"digestBytes": 2500}`), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := w.Project("burst")
	tag := marker("BURST")
	const n = 50
	name := func(i int) string { return fmt.Sprintf("%s-%02d", tag, i) }
	m := NewAnthropic(t)
	turns := []Turn{{Calls: []Call{Bash("echo start")}, Before: func(*Request) { // the agent is busy: its turn runs
		rows, err := w.listSessions()
		here := inDir(rows, dir)
		if err != nil || len(here) != 1 {
			t.Errorf("the agent's session in %s: %v (%d found)", dir, err, len(here))
			return
		}
		for i := range n {
			peer.Send(here[0].ID, name(i))
		}
	}}}
	for i := range 12 {
		turns = append(turns, Turn{Calls: []Call{Bash(fmt.Sprintf("echo step %d", i))}})
	}
	m.Script(append(turns, Turn{Text: "burst done"})...)
	c := w.RunClaudeOnce("claude", dir, m, "work through the steps")
	noHookFailed(t, c)
	for i := range n {
		seenOnce(t, m, name(i), "burst message "+name(i))
	}
	// Each boundary's new context: how many of the burst it carried.
	var carried []int
	first := ""
	for _, r := range m.Main() {
		text := lastUserText(r)
		if k := strings.Count(text, tag+"-"); k > 0 {
			if first == "" {
				first = text
			}
			carried = append(carried, k)
		}
	}
	total := 0
	for _, k := range carried {
		total += k
	}
	if total != n || len(carried) < 2 {
		t.Fatalf("the burst came in boundaries carrying %v (%d in all); want all %d, over more than one boundary", carried, total, n)
	}
	if want := fmt.Sprintf("%d more messages wait", n-carried[0]); !strings.Contains(first, want) {
		t.Errorf("the first digest does not say %q:\n%.3000s", want, first)
	}
	t.Logf("digests per boundary: %v", carried)
}

// A ping-pong between a real Claude Code agent and a peer stops after
// wakeLoopRounds rounds: the next peer steer does not wake the idle agent
// (the sender's reply says wake_loop, the agent's row names the paused
// pair), and it still reaches the model exactly once at its next natural
// boundary, the person's next prompt.
func TestClaudePingPongIsPausedByTheLoopBreaker(t *testing.T) {
	const rounds = 2
	w := NewWorld(t)
	// Before anything starts the broker: it reads its limits once.
	if err := os.WriteFile(filepath.Join(w.IntercomHome, "config.json"), []byte(fmt.Sprintf(`{"wakeLoopRounds": %d, "wakeBudget": 100}`, rounds)), 0o600); err != nil {
		t.Fatal(err)
	}
	w.InstallClaude()
	peer := w.StartAgentPeer("peer")
	dir := w.Project("pingpong")
	tag := marker("PP")
	ping := func(i int) string { return fmt.Sprintf("%s-PING-%d", tag, i) }
	pong := func(i int) string { return fmt.Sprintf("%s-PONG-%d", tag, i) }
	m := NewAnthropic(t)
	m.Script(Turn{Text: "ready"})
	cl := w.StartClaude("claude", dir, m)
	cl.Turn("hello", "ready", turnTimeout)
	target := w.AgentSession(dir, cl.SessionID).ID
	w.awaitStatus(target, "idle")
	// send is the peer's turn: busy, one steer to the agent, idle again.
	send := func(text string) string {
		t.Helper()
		w.OK("--session", peer.ID, "state", "thinking")
		r := w.Intercom("", nil, "--json", "--session", peer.ID, "send", target, text)
		w.OK("--session", peer.ID, "state", "idle")
		var res struct {
			WakeHeld string `json:"wake_held"`
		}
		if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &res) != nil {
			t.Fatalf("peer send: exit %d: %s%s", r.Code, r.Stdout, r.Stderr)
		}
		return res.WakeHeld
	}
	for i := 1; i <= rounds; i++ {
		m.Script(
			Turn{If: func(r *Request) bool { return strings.Contains(lastUserText(r), ping(i)) }, Calls: []Call{Bash("intercom send peer " + pong(i))}},
			Turn{Text: fmt.Sprintf("pong %d sent", i)},
		)
		if held := send(ping(i)); held != "" {
			t.Fatalf("round %d: the peer's steer held (%s)", i, held)
		}
		peer.AwaitMessage(pong(i), replyWait)
		cl.AwaitFinal(fmt.Sprintf("pong %d sent", i), replyWait)
		w.awaitStatus(target, "idle")
	}
	held := ping(rounds + 1)
	if why := send(held); why != "wake_loop" {
		t.Fatalf("after %d rounds the peer's steer: wake_held %q, want wake_loop", rounds, why)
	}
	var rows struct {
		Sessions []struct {
			ID         string `json:"id"`
			WakePaused string `json:"wake_paused"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(w.OK("--json", "list", "--scope", "all")), &rows); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows.Sessions {
		if r.ID == target && !strings.Contains(r.WakePaused, "peer") {
			t.Fatalf("the agent's row: wake_paused %q, want peer", r.WakePaused)
		}
	}
	m.Script(Turn{If: func(r *Request) bool { return strings.Contains(lastUserText(r), held) }, Text: "held ping seen"})
	cl.Turn("anything waiting?", "held ping seen", turnTimeout)
	noHookFailed(t, cl)
	seenOnce(t, m, held, "the steer the loop breaker held")
}

// Messages that reach a busy Pi during a tool come to its model as a
// digest rendered by the binary (`intercom digest`): the ask first, within
// digestBytes, the rest at the following tool boundaries; each exactly
// once.
func TestPiBurstArrivesAsDigests(t *testing.T) {
	eachPi(t, func(t *testing.T, line PiLine) {
		w := NewWorld(t)
		if err := os.WriteFile(filepath.Join(w.IntercomHome, "config.json"), []byte(`{"digestBytes": 1200}`), 0o600); err != nil {
			t.Fatal(err)
		}
		w.InstallPi()
		peer := w.StartAgentPeer("peer")
		dir := w.Project("pi-burst")
		tag := marker("PIB")
		const n = 8
		name := func(i int) string { return fmt.Sprintf("%s-%02d", tag, i) }
		ask := tag + "-ASK"
		m := NewAnthropic(t)
		pi := w.StartPi("pi", dir, line, m, nil)
		target := pi.Session().ID
		var cmd strings.Builder
		for i := range n {
			cmd.WriteString(pushedDuringTool(peer.ID, target, name(i)) + "; ")
		}
		fmt.Fprintf(&cmd, `id=$(intercom --session %s --json send --request-reply %s %s | sed -n 's/^{"id":"\([^"]*\)".*/\1/p'); until intercom trace "$id" | grep -q pushed; do sleep 0.1; done; echo sent`, peer.ID, target, ask)
		turns := []Turn{{Calls: []Call{PiBash(cmd.String())}}}
		for i := range 6 {
			turns = append(turns, Turn{Calls: []Call{PiBash(fmt.Sprintf("echo step %d", i))}})
		}
		m.Script(append(turns, Turn{Text: "burst done"})...)
		pi.Prompt("work through the steps")
		last := m.Last()
		for _, s := range append([]string{ask}, func() (all []string) {
			for i := range n {
				all = append(all, name(i))
			}
			return
		}()...) {
			if c := userCount(last, s); c != 1 {
				t.Errorf("the model's context holds %s %d times, want 1\n%s", s, c, m.Dump())
			}
		}
		first := m.Answered(1)
		if first == nil {
			t.Fatalf("no request after the tool\n%s", m.Dump())
		}
		digest := ""
		for _, u := range userTurns(first) {
			if strings.Contains(u, ask) {
				digest = u
			}
		}
		if digest == "" || strings.Index(digest, ask) > strings.Index(digest+name(0), name(0)) {
			t.Errorf("the first digest does not put the ask first:\n%s", digest)
		}
		if !strings.Contains(digest, "more messages wait") {
			t.Errorf("the first digest does not say that more wait:\n%s", digest)
		}
	})
}
