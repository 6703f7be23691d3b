//go:build harness

package harness

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Per-step limits: generous, since the machine may be shared and slow.
const (
	turnTimeout = 3 * time.Minute
	msgTimeout  = time.Minute
	// replyWait bounds how long a scripted peer waits for what the agent
	// sent before the agent's next model request: the send is stored by then.
	replyWait = 30 * time.Second
)

// Agent is one running harness process (Claude Code or one `codex exec`)
// with its stream of JSON events and its logs.
type Agent struct {
	t       *testing.T
	Name    string
	Dir     string // the agent's working directory (its project)
	Model   *Model
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	mu      sync.Mutex
	events  []map[string]any
	changed chan struct{}
	done    chan struct{}
	log     string // stdout + stderr of the process
}

// startAgent starts argv in dir with env and collects its JSON lines.
func (w *World) startAgent(name, dir string, model *Model, env []string, stdin bool, argv ...string) *Agent {
	w.t.Helper()
	logDir := filepath.Join(w.Root, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		w.t.Fatal(err)
	}
	a := &Agent{t: w.t, Name: name, Dir: dir, Model: model, changed: make(chan struct{}), done: make(chan struct{})}
	a.log = filepath.Join(logDir, fmt.Sprintf("%s-%d.log", name, time.Now().UnixNano()))
	logf, err := os.Create(a.log)
	if err != nil {
		w.t.Fatal(err)
	}
	a.cmd = exec.Command(argv[0], argv[1:]...)
	a.cmd.Dir = dir
	a.cmd.Env = append(append([]string(nil), w.Env...), env...)
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	a.cmd.Stderr = logf
	if stdin {
		if a.stdin, err = a.cmd.StdinPipe(); err != nil {
			w.t.Fatal(err)
		}
	}
	out, err := a.cmd.StdoutPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	if err := a.cmd.Start(); err != nil {
		w.t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
		for sc.Scan() {
			line := sc.Bytes()
			fmt.Fprintf(logf, "%s\n", line)
			var ev map[string]any
			if json.Unmarshal(line, &ev) != nil {
				continue
			}
			a.mu.Lock()
			a.events = append(a.events, ev)
			close(a.changed)
			a.changed = make(chan struct{})
			a.mu.Unlock()
		}
		_ = a.cmd.Wait()
		_ = logf.Close()
		close(a.done)
	}()
	w.t.Cleanup(func() {
		a.Kill()
		if model != nil && (w.t.Failed() || keep) {
			_ = os.WriteFile(a.log+".requests", []byte(model.Dump()), 0o644)
		}
		if w.t.Failed() {
			data, _ := os.ReadFile(a.log)
			w.t.Logf("%s log (%s):\n%s", name, a.log, tailLines(string(data), 60))
			if model != nil {
				w.t.Logf("%s model requests: %s.requests", name, a.log)
			}
		}
	})
	return a
}

// Events returns the JSON events seen so far.
func (a *Agent) Events() []map[string]any {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]map[string]any(nil), a.events...)
}

// AwaitEvent waits until an event after index from satisfies match and
// returns its index; it fails the test on timeout or when the process ends.
func (a *Agent) AwaitEvent(from int, timeout time.Duration, what string, match func(map[string]any) bool) int {
	a.t.Helper()
	deadline := time.After(timeout)
	for {
		a.mu.Lock()
		evs, ch := a.events, a.changed
		a.mu.Unlock()
		for i := from; i < len(evs); i++ {
			if match(evs[i]) {
				return i
			}
		}
		select {
		case <-ch:
		case <-a.done:
			a.mu.Lock()
			n := len(a.events)
			a.mu.Unlock()
			if n == len(evs) {
				a.t.Fatalf("%s exited before %s (exit %v)", a.Name, what, a.cmd.ProcessState)
			}
		case <-deadline:
			a.t.Fatalf("%s: timed out after %s waiting for %s", a.Name, timeout, what)
		}
	}
}

// Wait waits for the process to exit and returns its exit code.
func (a *Agent) Wait(timeout time.Duration) int {
	a.t.Helper()
	select {
	case <-a.done:
	case <-time.After(timeout):
		a.t.Fatalf("%s did not exit within %s", a.Name, timeout)
	}
	return a.cmd.ProcessState.ExitCode()
}

// Pid is the harness process's id.
func (a *Agent) Pid() int { return a.cmd.Process.Pid }

// Kill ends the process group of the harness.
func (a *Agent) Kill() {
	select {
	case <-a.done:
		return
	default:
	}
	_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-a.done:
	case <-time.After(10 * time.Second):
	}
}

// Log is the harness's output so far.
func (a *Agent) Log() string {
	data, _ := os.ReadFile(a.log)
	return string(data)
}

func tailLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// withTimeout is a context bounded by d.
func withTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
