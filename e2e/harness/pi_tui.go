//go:build harness

package harness

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// PiTUI is an interactive Pi in a tmux pane of a private tmux server
// (socket in the world root), with extended keys on so that alt+shift
// keys reach Pi as CSI-u.
type PiTUI struct {
	w    *World
	sock string
}

// StartPiTUI starts interactive pi in dir in a 160x40 tmux pane.
func (w *World) StartPiTUI(name, dir string, line PiLine, model *Model) *PiTUI {
	w.t.Helper()
	p := &PiTUI{w: w, sock: filepath.Join(w.Root, "tmux-"+name+".sock")}
	argv := line.argv("--model", w.piModel(name, model))
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	p.tmux("new-session", "-d", "-x", "160", "-y", "40", "-c", dir, strings.Join(quoted, " "))
	p.tmux("set", "-g", "extended-keys", "always")
	w.t.Cleanup(func() { _, _ = p.run("kill-server") })
	return p
}

func (p *PiTUI) run(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, "tmux", append([]string{"-S", p.sock, "-f", "/dev/null"}, args...)...)
	c.Env = piEnv(p.w.Env)
	out, err := c.CombinedOutput()
	return string(out), err
}

func (p *PiTUI) tmux(args ...string) string {
	p.w.t.Helper()
	out, err := p.run(args...)
	if err != nil {
		p.w.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return out
}

// Screen is the pane's text now.
func (p *PiTUI) Screen() string { out, _ := p.run("capture-pane", "-p"); return out }

// AwaitScreen waits until the pane shows s.
func (p *PiTUI) AwaitScreen(s string) {
	p.w.t.Helper()
	deadline := time.Now().Add(msgTimeout)
	for !strings.Contains(p.Screen(), s) {
		if time.Now().After(deadline) {
			p.w.t.Fatalf("the Pi pane never showed %q; it shows:\n%s", s, p.Screen())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// AwaitScreenWithout waits until the pane no longer shows s.
func (p *PiTUI) AwaitScreenWithout(s string) {
	p.w.t.Helper()
	deadline := time.Now().Add(msgTimeout)
	for strings.Contains(p.Screen(), s) {
		if time.Now().After(deadline) {
			p.w.t.Fatalf("the Pi pane still shows %q:\n%s", s, p.Screen())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Keys sends tmux key names (Enter, Down, Escape, ...).
func (p *PiTUI) Keys(keys ...string) { p.tmux(append([]string{"send-keys"}, keys...)...) }

// Type sends text literally.
func (p *PiTUI) Type(text string) { p.tmux("send-keys", "-l", text) }

// Raw sends bytes as they are (an escape sequence a terminal would send).
func (p *PiTUI) Raw(b []byte) {
	args := []string{"send-keys", "-H"}
	for _, c := range b {
		args = append(args, fmt.Sprintf("%02x", c))
	}
	p.tmux(args...)
}
