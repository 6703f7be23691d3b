package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// `intercom opencode`, the OpenCode plugin's holder, run as the plugin runs
// it: it registers oc-<OpenCode session id>, says when a waking message
// waits, hands it over on "deliver" and acknowledges it only after
// "handed"; the end of stdin lets the session go.
func TestOpenCodeHolderCommand(t *testing.T) {
	t.Parallel()
	h := newH(t)
	c := h.cmd(context.Background(), "intercom", "opencode", "--opencode-session", "ses_e2e01", "--name", "oc-api")
	stdin, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	oc := h.startCmd(c)
	event := func(want string) map[string]any {
		t.Helper()
		ev := oc.Event(10 * time.Second)
		if ev["event"] != want {
			t.Fatalf("next event %v, want %q (stderr: %s)", ev, want, oc.Stderr())
		}
		return ev
	}
	if ev := event("ready"); ev["session"] != "oc-ses_e2e01" || ev["name"] != "oc-api" {
		t.Fatalf("ready %v", ev)
	}
	fmt.Fprintln(stdin, `{"op":"state","state":"tool:bash"}`)
	h.Attach("--name", "peer")
	h.OK("-s", "peer", "send", "oc-api", "build the parser")
	event("waiting")

	fmt.Fprintln(stdin, `{"op":"deliver","req":1}`)
	if ev := event("deliver"); ev["req"] != float64(1) || !strings.Contains(fmt.Sprint(ev["text"]), "build the parser") {
		t.Fatalf("deliver %v", ev)
	}
	queued := func() float64 {
		var st struct {
			Queued float64 `json:"queued_inbound"`
		}
		h.JSON(&st, "-s", "oc-api", "--json", "status")
		return st.Queued
	}
	if n := queued(); n != 1 {
		t.Fatalf("before handed: %v messages queued, want the one not yet acknowledged", n)
	}
	fmt.Fprintln(stdin, `{"op":"handed","req":1}`)
	if ev := event("done"); ev["req"] != float64(1) || ev["acked"] != float64(1) {
		t.Fatalf("done %v", ev)
	}
	Eventually(t, 10*time.Second, func() bool { return queued() == 0 }, "the handed message acknowledged")

	stdin.Close()
	if code := oc.ExitCode(10 * time.Second); code != 0 {
		t.Fatalf("intercom opencode exited %d at the end of stdin: %s", code, oc.Stderr())
	}
}
