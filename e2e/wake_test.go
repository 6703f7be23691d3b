package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// wakeSide is one of two agents played by the test: its session held by a
// real `intercom attach --json` holder, its lifecycle reported with
// `intercom state` as a harness's hooks do.
type wakeSide struct {
	name, id string
	holder   *Proc
}

// attachAsAgent starts a holder as an agent's harness would (CLAUDECODE=1,
// asAgent): the person mark follows the connection that holds a session,
// and a person's message always wakes.
func attachAsAgent(h *H, args ...string) (*Proc, map[string]any) {
	h.t.Helper()
	saved := h.Env
	h.Env = append(append([]string(nil), saved...), "CLAUDECODE=1")
	defer func() { h.Env = saved }()
	return h.Attach(args...)
}

// Two agents that wake each other back and forth with no person involved
// are paused after wakeLoopRounds rounds: the next steer is delivered but
// does not wake (the sender's reply and the pushed message say wake_loop),
// both rows show the paused pair in list, and a person's message resumes
// them.
func TestWakeLoopBreakerPausesPingPong(t *testing.T) {
	t.Parallel()
	h := newH(t)
	const rounds = 2
	h.WriteConfig(fmt.Sprintf(`{"wakeLoopRounds": %d, "wakeBudget": 100}`, rounds))
	attach := func(name string) *wakeSide {
		p, ev := attachAsAgent(h, "--name", name)
		t.Cleanup(p.Stop)
		return &wakeSide{name: name, id: ev["id"].(string), holder: p}
	}
	ping, pong := attach("ping"), attach("pong")
	// turn: from is awake, sends text to to and ends its turn (idle); to's
	// holder gets the message, and its wake_held says whether it woke.
	turn := func(from, to *wakeSide, text string) (replyHeld, pushedHeld string) {
		t.Helper()
		h.OK("--session", from.id, "state", "thinking")
		var res map[string]any
		h.JSON(&res, "--session", from.id, "send", to.name, text)
		h.OK("--session", from.id, "state", "idle")
		ev := to.holder.Event(20 * time.Second)
		if ev["event"] != "message" || ev["text"] != text {
			t.Fatalf("%s's holder printed %v, want the message %q", to.name, ev, text)
		}
		r, _ := res["wake_held"].(string)
		p, _ := ev["wake_held"].(string)
		return r, p
	}
	for r := range rounds {
		for _, pair := range [][2]*wakeSide{{ping, pong}, {pong, ping}} {
			text := fmt.Sprintf("round %d: %s to %s", r+1, pair[0].name, pair[1].name)
			if rh, ph := turn(pair[0], pair[1], text); rh != "" || ph != "" {
				t.Fatalf("%s: held (reply %q, pushed %q) within %d rounds", text, rh, ph, rounds)
			}
		}
	}
	rh, ph := turn(ping, pong, "one round too many")
	if rh != "wake_loop" || ph != "wake_loop" {
		t.Fatalf("after %d rounds: reply wake_held %q, pushed %q; want wake_loop for both", rounds, rh, ph)
	}
	out := h.OK("--session", pong.id, "send", "ping", "and back")
	if !strings.Contains(out, "wake-ups between you and ping are paused") {
		t.Errorf("send while paused does not tell the sender:\n%s", out)
	}
	if ev := ping.holder.Event(20 * time.Second); ev["wake_held"] != "wake_loop" {
		t.Fatalf("ping got %v, want it held by the loop breaker", ev)
	}
	rows := h.Sessions("--scope", "all")
	for name, other := range map[string]string{"ping": "pong", "pong": "ping"} {
		if r := Row(rows, name); r == nil || !strings.Contains(fmt.Sprint(r["wake_paused"]), other) {
			t.Fatalf("row %s: %v, want wake_paused naming %s", name, r, other)
		}
	}
	if list := h.OK("list", "--scope", "all"); !strings.Contains(list, "wake_paused_with:") {
		t.Errorf("list does not show the paused pair:\n%s", list)
	}

	// A person, at a terminal that is no agent's, writes to ping.
	h.OK("send", "ping", "a person says: go on")
	ev := ping.holder.Event(20 * time.Second)
	if ev["text"] != "a person says: go on" {
		t.Fatalf("ping got %v, want the person's message", ev)
	}
	if ev["from_person"] != true {
		t.Fatalf("the terminal's message is not marked as from a person: %v", ev)
	}
	if rh, ph := turn(ping, pong, "resumed"); rh != "" || ph != "" {
		t.Fatalf("after the person's message: held (reply %q, pushed %q)", rh, ph)
	}
	if r := Row(h.Sessions("--scope", "all"), "ping"); r == nil || r["wake_paused"] != nil {
		t.Fatalf("row ping after the person's message: %v", r)
	}
}

// Peers wake an idle agent at most wakeBudget times per window; the next
// peer steer does not wake it (wake_budget), and the sender is told; it is
// still delivered (a holder prints it, for its harness to hand over at the
// next boundary).
func TestWakeBudgetHoldsTheNextPeerSteer(t *testing.T) {
	t.Parallel()
	h := newH(t)
	h.WriteConfig(`{"wakeBudget": 2, "wakeLoopRounds": 0}`)
	p, ev := h.Attach("--name", "worker")
	t.Cleanup(p.Stop)
	worker := ev["id"].(string)
	peer, pev := attachAsAgent(h, "--name", "peer")
	t.Cleanup(peer.Stop)
	from := pev["id"].(string)
	for i := range 3 {
		text := fmt.Sprintf("peer steer %d", i+1)
		var res map[string]any
		h.JSON(&res, "--session", from, "send", "worker", text)
		got := p.Event(20 * time.Second)
		if got["text"] != text {
			t.Fatalf("worker got %v, want %q", got, text)
		}
		want := ""
		if i == 2 {
			want = "wake_budget"
		}
		rh, _ := res["wake_held"].(string)
		ph, _ := got["wake_held"].(string)
		if rh != want || ph != want {
			t.Fatalf("steer %d: reply wake_held %q, pushed %q; want %q", i+1, rh, ph, want)
		}
		// Woken (or, for the held one, its next boundary): busy, then idle.
		h.OK("--session", worker, "state", "thinking")
		h.OK("--session", worker, "state", "idle")
	}
}

// `intercom digest` renders what an extension holds as one digest: the
// ask first, within the budget, the rest said to wait; bad input is a
// usage error (exit 2).
func TestDigestCommand(t *testing.T) {
	t.Parallel()
	h := newH(t)
	var msgs []string
	for i := range 6 {
		msgs = append(msgs, fmt.Sprintf(`{"id":"m%d","from":{"id":"p","name":"peer"},"text":"note %d %s","delivery":"steer"}`, i, i, strings.Repeat("x", 300)))
	}
	msgs = append(msgs, `{"id":"ask","from":{"id":"p","name":"peer"},"text":"which one?","delivery":"steer","expects_reply":true}`)
	r := h.RunIn(h.Cwd, `{"messages":[`+strings.Join(msgs, ",")+`]}`, "--json", "digest", "--bytes", "1500")
	var d struct {
		Text    string   `json:"text"`
		Shown   []string `json:"shown"`
		Waiting int      `json:"waiting"`
	}
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &d) != nil {
		t.Fatalf("digest: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if len(d.Shown) == 0 || d.Shown[0] != "ask" || d.Waiting != 7-len(d.Shown) || d.Waiting == 0 {
		t.Fatalf("shown %v, waiting %d: want the ask first and the rest waiting", d.Shown, d.Waiting)
	}
	if len(d.Text) > 1500 || !strings.Contains(d.Text, fmt.Sprintf("%d more messages wait", d.Waiting)) {
		t.Fatalf("digest of %d bytes:\n%s", len(d.Text), d.Text)
	}
	if r := h.RunIn(h.Cwd, "not json", "digest"); r.Code != 2 {
		t.Fatalf("bad input: exit %d, want 2\n%s", r.Code, r.Stderr)
	}
}
