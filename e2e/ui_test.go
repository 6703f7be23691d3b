package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/internal/testenv"
)

// tmuxUI runs `intercom ui` in a detached 80×24 tmux session on a private
// tmux server and returns a function capturing the pane.
func tmuxUI(t *testing.T, h *H, args ...string) (capture func() string, keys func(...string)) {
	t.Helper()
	testenv.Command(t, "tmux", "the UI smoke test drives intercom ui in it (apt-get install -y tmux)")
	sock := fmt.Sprintf("ic-ui-%d-%d", os.Getpid(), time.Now().UnixNano())
	tmux := func(a ...string) (string, error) {
		out, err := exec.Command("tmux", append([]string{"-L", sock}, a...)...).CombinedOutput()
		return string(out), err
	}
	cmd := fmt.Sprintf("cd %q && exec env INTERCOM_HOME=%q INTERCOM_SESSION= INTERCOM_SOCKET= GORACE=atexit_sleep_ms=0 %s %s",
		h.Cwd, h.Home, binDir+"/intercom", strings.Join(append([]string{"ui"}, args...), " "))
	if out, err := tmux("new-session", "-d", "-s", "ui", "-x", "80", "-y", "24", cmd); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = tmux("kill-server") })
	capture = func() string {
		out, _ := tmux("capture-pane", "-p", "-t", "ui")
		return out
	}
	keys = func(k ...string) {
		t.Helper()
		if out, err := tmux(append([]string{"send-keys", "-t", "ui"}, k...)...); err != nil {
			t.Fatalf("tmux send-keys: %v\n%s", err, out)
		}
	}
	return capture, keys
}

func TestUISmokeInTmux(t *testing.T) {
	h := newH(t)
	worker, _ := h.Attach("--name", "worker")
	capture, keys := tmuxUI(t, h, "--name", "alice")
	var screen string
	Eventually(t, 20*time.Second, func() bool {
		screen = capture()
		return strings.Contains(screen, "Sessions") && strings.Contains(screen, "worker") && strings.Contains(screen, "NAME")
	}, "the session list in the tmux pane")
	lines := strings.Split(strings.TrimRight(screen, "\n"), "\n")
	if len(lines) > 24 {
		t.Fatalf("pane has %d lines:\n%s", len(lines), screen)
	}
	// The UI is a session of its own.
	Eventually(t, 10*time.Second, func() bool { return Row(h.Sessions(), "alice") != nil }, "alice in intercom list")

	// Enter composes to the selected session; Enter sends.
	keys("Enter")
	Eventually(t, 10*time.Second, func() bool { return strings.Contains(capture(), "[Send]") }, "the compose overlay")
	keys("-l", "hello from the ui")
	keys("Enter")
	ev := worker.Event(20 * time.Second)
	if ev["event"] != "message" || ev["text"] != "hello from the ui" {
		t.Fatalf("worker got %v", ev)
	}
	Eventually(t, 10*time.Second, func() bool { return strings.Contains(capture(), "Sent to worker") }, "the sent notice")

	// Alt+Shift+M (ESC M from tmux) opens the conversations view.
	keys("M-M")
	Eventually(t, 10*time.Second, func() bool { return strings.Contains(capture(), "[2 Conversations]") }, "the conversations view")
	keys("q")
	Eventually(t, 10*time.Second, func() bool {
		r := Row(h.Sessions("--all"), "alice")
		return r != nil && r["connected"] == false
	}, "alice to detach after q")
}
