// Package detach starts processes that outlive the one that starts them:
// the broker (package spawn), an agent's session holder (`intercom hold`)
// and a run's owner (`agent-runs own`). A detached child runs in a session
// of its own (no controlling terminal, no signals from the starter's
// terminal), reads nothing, writes its output to a log file or nowhere, and
// tells its starter on a pipe when it is ready (TakeReady, Signal).
package detach

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ReadyEnv names the descriptor a detached child reports readiness on.
const ReadyEnv = "INTERCOM_READY_FD"

// Spec says what to start.
type Spec struct {
	Path string
	Args []string
	Env  []string // the child's whole environment (Start sets ReadyEnv)
	Dir  string   // working directory; "" keeps the caller's
	Log  string   // stdout and stderr are appended to this file (0600); "" discards them
}

// Child is a started detached process. Start reaps it when it ends.
type Child struct {
	Pid    int
	ready  chan struct{}
	read   chan struct{} // closed once the readiness pipe is done (a byte, or closed)
	exited chan struct{}
	err    error // how it ended, once exited is closed
}

// Start starts s detached.
func Start(s Spec) (*Child, error) {
	cmd := exec.Command(s.Path, s.Args...)
	cmd.Dir = s.Dir
	cmd.SysProcAttr = sysProcAttr()
	if s.Log != "" {
		logf, err := os.OpenFile(s.Log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("open log %s: %w", s.Log, err)
		}
		defer logf.Close() // the child holds its own copy
		cmd.Stdout, cmd.Stderr = logf, logf
	}
	ch := &Child{ready: make(chan struct{}), read: make(chan struct{}), exited: make(chan struct{})}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("readiness pipe: %w", err)
	}
	defer w.Close() // the child holds its own copy: the read ends when it exits
	cmd.ExtraFiles = []*os.File{w}
	cmd.Env = append(withoutReady(s.Env), ReadyEnv+"=3")
	if err := cmd.Start(); err != nil {
		r.Close()
		return nil, err // it names the path
	}
	ch.Pid = cmd.Process.Pid
	go func() {
		defer close(ch.read)
		defer r.Close()
		var b [1]byte
		if n, _ := r.Read(b[:]); n == 1 {
			close(ch.ready)
		}
	}()
	go func() {
		ch.err = cmd.Wait()
		close(ch.exited)
	}()
	return ch, nil
}

// Beside finds the executable name beside the running executable (the
// binaries are installed together), else on PATH.
func Beside(name string) (string, error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	return exec.LookPath(name)
}

// withoutReady is env without a ReadyEnv the caller itself was given.
func withoutReady(env []string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, ReadyEnv+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// Ready is closed once the child has reported that it is ready.
func (c *Child) Ready() <-chan struct{} { return c.ready }

// Exited is closed once the child has ended; Err then says how.
func (c *Child) Exited() <-chan struct{} { return c.exited }

// Err is how the child ended (nil: status 0), once Exited is closed.
func (c *Child) Err() error {
	select {
	case <-c.exited:
		return c.err
	default:
		return nil
	}
}

// Errors of WaitReady.
var (
	ErrExited   = errors.New("exited before it was ready")
	ErrNotReady = errors.New("not ready in time")
)

// WaitReady waits until the child reports readiness (nil), ends first
// (ErrExited, with how it ended), within passes (ErrNotReady) or ctx ends.
func (c *Child) WaitReady(ctx context.Context, within time.Duration) error {
	t := time.NewTimer(within)
	defer t.Stop()
	select {
	case <-c.ready:
		return nil
	case <-c.exited:
		select { // its end of the pipe closed with it
		case <-c.read:
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
		select {
		case <-c.ready: // it reported, then ended
			return nil
		default:
		}
		if c.err != nil {
			return fmt.Errorf("%w (%v)", ErrExited, c.err)
		}
		return ErrExited
	case <-t.C:
		return fmt.Errorf("%w: %s", ErrNotReady, within)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Ready is a detached child's side of the readiness pipe.
type Ready struct{ f *os.File }

// TakeReady is called early by a detached child: it takes the readiness
// descriptor its starter passed (none: a Ready that does nothing), so that
// processes the child starts itself do not inherit it.
func TakeReady() Ready {
	v := os.Getenv(ReadyEnv)
	if v == "" {
		return Ready{}
	}
	_ = os.Unsetenv(ReadyEnv)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return Ready{}
	}
	closeOnExec(fd)
	return Ready{os.NewFile(uintptr(fd), "ready")}
}

// Signal tells the starter that the child is ready (once; later calls do
// nothing).
func (r *Ready) Signal() {
	if r.f == nil {
		return
	}
	_, _ = r.f.Write([]byte{'\n'})
	r.f.Close()
	r.f = nil
}
