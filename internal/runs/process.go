package runs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/intercom-dev/intercom/internal/bounded"
	"github.com/intercom-dev/intercom/internal/detach"
	"github.com/intercom-dev/intercom/internal/procinfo"
)

// Launcher starts the detached owner of run id (package detach).
type Launcher func(id string) (*detach.Child, error)

// OwnerLauncher is the Launcher that runs `exe own RUN` (exe is agent-runs;
// "" finds it beside the running executable or on PATH) for the runs in st, with INTERCOM_HOME=home and
// the owner's output in the run's owner.log, and INTERCOM_RUN_ID=id: the
// owner is an agent launcher, so the broker never takes its notices and
// ladder steps for a person's messages (internal/broker/person.go). The
// owner reports readiness once it has recorded the launch (running, or
// failed).
func OwnerLauncher(exe, home string, st Files) Launcher {
	return func(id string) (*detach.Child, error) {
		exe := exe
		if exe == "" {
			var err error
			if exe, err = detach.Beside("agent-runs"); err != nil {
				return nil, fmt.Errorf("find agent-runs: not beside %s nor on PATH", os.Args[0])
			}
		}
		child, err := detach.Start(detach.Spec{Path: exe, Args: []string{"own", id}, Dir: "/",
			Env: append(os.Environ(), "INTERCOM_HOME="+home, EnvRunID+"="+id), Log: filepath.Join(st.RunDir(id), "owner.log")})
		if err != nil {
			return nil, fmt.Errorf("start run owner: %w", err)
		}
		return child, nil
	}
}

// Alive reports whether pid runs (and is not a zombie).
func Alive(pid int) bool {
	return procinfo.Alive(pid)
}

// Terminate sends SIGTERM to the process group of pid, then SIGKILL after
// grace if done has not become true.
func Terminate(pid int, grace time.Duration, done func() bool) error {
	if pid <= 0 {
		return errors.New("no child pid recorded")
	}
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if done() || !Alive(pid) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = syscall.Kill(pid, syscall.SIGKILL)
	return nil
}

// Tail returns the last n bytes of a file.
func Tail(path string, n int64) string { return string(bounded.Tail(path, 0, n)) }

// Interrupt sends SIGINT to the process group of pid (to pid alone when
// it leads no group): what a terminal's Ctrl-C does to a harness. Once:
// a shell that traps it would see a second signal as a second Ctrl-C.
func Interrupt(pid int) error {
	if pid <= 0 {
		return errors.New("no child pid recorded")
	}
	if err := syscall.Kill(-pid, syscall.SIGINT); err == nil {
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGINT); err != nil {
		return fmt.Errorf("interrupt %d: %w", pid, err)
	}
	return nil
}
