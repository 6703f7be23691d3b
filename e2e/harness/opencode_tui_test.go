//go:build harness

package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// startOpenCodeTUI runs the OpenCode TUI in a detached tmux pane (a real
// terminal) in dir with the given first prompt; nobody types into it after.
// capture returns the pane's text.
func (w *World) startOpenCodeTUI(dir, prompt string) (capture func() string) {
	w.t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		w.t.Skip("tmux is not installed: the OpenCode TUI test needs a terminal")
	}
	sq := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	var script strings.Builder
	script.WriteString("#!/bin/sh\n")
	for _, kv := range append(append([]string(nil), w.Env...), w.openCodeEnv(dir)...) {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" && !strings.ContainsAny(k, " -.") {
			fmt.Fprintf(&script, "export %s=%s\n", k, sq(v))
		}
	}
	fmt.Fprintf(&script, "export TERM=xterm-256color\ncd %s\nexec %s --model standin/m --prompt %s\n", sq(dir), sq(openCodeBin(w.t)), sq(prompt))
	path := filepath.Join(w.Root, "opencode-tui.sh")
	if err := os.WriteFile(path, []byte(script.String()), 0o755); err != nil {
		w.t.Fatal(err)
	}
	sock := "ic-oc-tui-" + filepath.Base(w.Root)
	tmux := func(a ...string) (string, error) {
		out, err := exec.Command("tmux", append([]string{"-L", sock}, a...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := tmux("new-session", "-d", "-s", "oc", "-x", "120", "-y", "40", path); err != nil {
		w.t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	capture = func() string { out, _ := tmux("capture-pane", "-p", "-t", "oc"); return out }
	w.t.Cleanup(func() {
		if w.t.Failed() {
			w.t.Logf("OpenCode TUI pane:\n%s", capture())
		}
		_, _ = tmux("kill-server")
	})
	return capture
}

// An idle OpenCode TUI session, with nobody typing, is woken by a steer:
// the message starts a turn by itself.
func TestOpenCodeWakesIdleTUISession(t *testing.T) {
	w, m, peer := openCodeWorld(t)
	dir := w.Project("tui")
	hello := marker("HELLO")
	first := m.Script(Turn{If: func(r *Request) bool { return r.Contains(hello) }, Text: "ready"})
	w.startOpenCodeTUI(dir, hello)
	Await(t, turnTimeout, func() bool { return m.Answered(first) != nil }, "the TUI's first turn")
	var sid string
	Await(t, turnTimeout, func() bool {
		for _, s := range w.SessionsIn(dir) {
			if strings.HasPrefix(s.ID, "oc-") && s.Status == "idle" && s.Connected {
				sid = s.ID
				return true
			}
		}
		return false
	}, "the TUI's session to be idle")
	msg := marker("WAKE-TUI")
	woke := m.Script(Turn{If: func(r *Request) bool { return r.Contains(msg) }, Text: "woken"})
	peer.Send(sid, msg)
	Await(t, turnTimeout, func() bool { return m.Answered(woke) != nil }, "the idle TUI session to wake with %s", msg)
	seenOnce(t, m, msg, "message that woke an idle TUI session")
	if !m.Answered(woke).Contains(hello) {
		t.Errorf("the wake-up did not continue the TUI's session (its first prompt is not in the request)")
	}
}
