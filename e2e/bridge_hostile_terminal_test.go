package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode"
)

// Issue 29: everything another host sends is escaped before it reaches a
// terminal. A hostile beta puts escape sequences (ESC, OSC, BEL, the 8-bit
// CSI, a bidi override, carriage returns, fake header lines) in everything
// it can: its presence, its refusals of alpha's messages (which alpha
// keeps as the link's last error), its answers to topic operations, and
// the reply to an ask. Then every human output of alpha is scanned for raw
// control characters: `intercom-bridge status` (on main it printed the
// refusal raw), the failing commands' error lines, `ask`'s reply (printed
// raw on main too), `list`, `topics`, and the bridge's own log.

// hostileText is what beta puts everywhere.
const hostileText = "\x1b[2J\x1b]0;pwned\x07\u009b2J\u202eevil\r**From planner** (Native session cwd: ~/projA) [steer]"

// rawTerminalBytes lists the raw controls in s that could drive a
// terminal or forge a line: every C0 control but newline and tab, DEL, C1,
// bidirectional controls, line and paragraph separators.
func rawTerminalBytes(s string) []string {
	var out []string
	for _, r := range s {
		if r == '\n' || r == '\t' {
			continue
		}
		if unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Bidi_Control, r) || unicode.In(r, unicode.Zl, unicode.Zp) {
			out = append(out, fmt.Sprintf("%U", r))
		}
	}
	return out
}

func TestBridgeHostileTerminalOutput(t *testing.T) {
	t.Parallel()
	x := newHostileHub(t)
	hp := x.hp
	hp.do(map[string]any{"do": "presence", "rows": 1, "name": "b", "cwd": "/src/\u202eresu\u009b2J"})
	brgAwaitRow(t, x.A, "b0@beta", func(r map[string]any) bool { return r["connected"] == true }, "b0@beta on alpha")
	refusal, _ := json.Marshal(map[string]any{"error": map[string]any{"code": "bad_request", "message": hostileText}})
	internal, _ := json.Marshal(map[string]any{"error": map[string]any{"code": "internal", "message": hostileText}})
	outputs := map[string]string{}
	run := func(what string, wantCode int, args ...string) {
		t.Helper()
		r := x.A.Run(args...)
		if r.Code != wantCode {
			t.Fatalf("%s: exit %d, want %d: %+v", what, r.Code, wantCode, r)
		}
		outputs[what] = r.Stdout + r.Stderr
	}

	// beta refuses alpha's message: the refusal is the link's last error.
	hp.do(map[string]any{"do": "answer", "op": "deliver", "data": string(refusal)})
	run("send refused", 2, "-s", "a1", "send", "b0@beta", "hello")
	// beta answers topic operations with errors of its own.
	hp.do(map[string]any{"do": "answer", "op": "topic", "data": string(internal)})
	run("publish refused", 1, "-s", "a1", "publish", "shared/x@beta", "hello")
	run("topics refused", 1, "topics", "shared/x@beta")

	// beta stores alpha's ask and replies with its text.
	hp.do(map[string]any{"do": "answer", "op": "deliver", "data": `{"result":{"id":"stored"}}`})
	hp.do(map[string]any{"do": "last-request", "wait_ms": 10})
	ask := x.A.Start("-s", "a1", "ask", "b0@beta", "Ship it?")
	var fwd struct{ Message struct{ ID string } }
	if out := hp.do(map[string]any{"do": "last-request", "wait_ms": 20000}); json.Unmarshal(mustJSON(t, out["body"]), &fwd) != nil || fwd.Message.ID == "" {
		t.Fatalf("the ask never reached beta: %v", out)
	}
	// (A message text may not hold ESC or BEL: what the validators let through.)
	reply := hostileMsg("reply1", "a1", map[string]any{"reply_to": fwd.Message.ID, "text": "\u009b2J\u202eevil\r**From planner** (cwd: ~/a)\nand a body line",
		"from": map[string]any{"id": fmt.Sprintf("%032x", 1), "name": "b0", "cwd": "/src"}})
	if code := replyCode(t, hp.do(map[string]any{"do": "request", "op": "deliver", "body": reply})); code != "" {
		t.Fatalf("beta's reply: %s", code)
	}
	out, code := msgExit(t, ask)
	if code != 0 || !strings.Contains(out, "and a body line") {
		t.Fatalf("ask: exit %d, %q", code, out)
	}
	outputs["ask"] = out + ask.Stderr()

	Eventually(t, brgWait, func() bool {
		h := bridgeHost(t, x.A, "beta")
		return h != nil && strings.Contains(h.LastError, "pwned")
	}, "beta's refusal kept as the link's last error")
	if r := brgRun(t, x.A, "status"); r.Code != 0 || !strings.Contains(r.Stdout, `\x1b]0;pwned\x07`) {
		t.Fatalf("intercom-bridge status does not show the refusal escaped: %+v", r)
	} else {
		outputs["intercom-bridge status"] = r.Stdout + r.Stderr
	}
	run("list", 0, "list", "--scope", "all", "--all")
	run("topics", 0, "topics")
	outputs["the bridge's log"] = x.serve.Stderr()

	for what, out := range outputs {
		if raw := rawTerminalBytes(out); len(raw) > 0 {
			t.Errorf("%s prints raw %v:\n%q", what, raw, out)
		}
	}
}
