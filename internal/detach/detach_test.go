package detach

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// await is how long a test waits for an event that is sure to come.
const await = 30 * time.Second

func startSh(t *testing.T, script string, env []string, log string) *Child {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Start(Spec{Path: sh, Args: []string{"-c", script}, Env: env, Dir: "/", Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(c.Pid, syscall.SIGKILL)
		<-c.Exited()
	})
	return c
}

func TestReadyChildRunsInItsOwnSessionWithTheGivenEnvAndLog(t *testing.T) {
	t.Setenv(ReadyEnv, "9") // the starter's own descriptor is not passed on
	log := filepath.Join(t.TempDir(), "child.log")
	c := startSh(t, `echo "dir=$(pwd) marker=$MARKER ready=$`+ReadyEnv+`"; echo to-stderr >&2; echo >&3; exec sleep 60`,
		[]string{"MARKER=m1", ReadyEnv + "=7", "PATH=" + os.Getenv("PATH")}, log)
	if err := c.WaitReady(t.Context(), await); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	sid, err := unix.Getsid(c.Pid)
	if err != nil || sid != c.Pid {
		t.Errorf("child %d is in session %d (%v), want a session of its own", c.Pid, sid, err)
	}
	if mine, _ := unix.Getsid(0); sid == mine {
		t.Errorf("child shares the starter's session %d", mine)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"dir=/ marker=m1 ready=3\n", "to-stderr\n"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("log %q lacks %q", data, want)
		}
	}
	if fi, err := os.Stat(log); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("log mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	select {
	case <-c.Exited():
		t.Fatal("child exited while it should be sleeping")
	default:
	}
}

func TestChildThatEndsUnreadyIsReportedWithItsStatus(t *testing.T) {
	c := startSh(t, "exit 3", nil, "")
	err := c.WaitReady(t.Context(), await)
	if !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("WaitReady: %v, want ErrExited with exit status 3", err)
	}
	var ee *exec.ExitError
	if !errors.As(c.Err(), &ee) || ee.ExitCode() != 3 {
		t.Fatalf("Err: %v, want exit status 3", c.Err())
	}
}

func TestChildThatSignalsThenEndsIsReady(t *testing.T) {
	c := startSh(t, "echo >&3; exit 0", nil, "")
	<-c.Exited()
	if err := c.WaitReady(t.Context(), await); err != nil {
		t.Fatalf("WaitReady after a signal and a clean exit: %v, want nil", err)
	}
}

func TestWaitReadyEndsWithItsContext(t *testing.T) {
	c := startSh(t, "exec sleep 60", nil, "")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := c.WaitReady(ctx, await); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitReady with a cancelled context: %v", err)
	}
}

func TestTakeReadySignalsOnceAndKeepsTheDescriptorFromExecs(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fd, err := unix.Dup(int(w.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Setenv(ReadyEnv, strconv.Itoa(fd))
	ready := TakeReady()
	if v, ok := os.LookupEnv(ReadyEnv); ok {
		t.Errorf("%s still set (%q) after TakeReady", ReadyEnv, v)
	}
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	if err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Errorf("descriptor flags %#x (%v), want close-on-exec", flags, err)
	}
	ready.Signal()
	ready.Signal() // once only
	data := make([]byte, 8)
	n, err := r.Read(data)
	if err != nil || n != 1 {
		t.Fatalf("read %d bytes (%v), want the one readiness byte", n, err)
	}
	if n, err := r.Read(data); n != 0 || err == nil {
		t.Fatalf("after the signal: read %d bytes (%v), want the pipe closed", n, err)
	}
	none := TakeReady() // nothing passed: signalling does nothing
	none.Signal()
}

func TestBesideFindsTheRunningBinarysSiblingElsePath(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Beside(filepath.Base(exe)); err != nil || got != exe {
		t.Errorf("Beside(%q) = %q, %v; want %q", filepath.Base(exe), got, err, exe)
	}
	dir := t.TempDir()
	tool := filepath.Join(dir, "intercom-detach-test-tool")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	if got, err := Beside("intercom-detach-test-tool"); err != nil || got != tool {
		t.Errorf("Beside on PATH = %q, %v; want %q", got, err, tool)
	}
	if _, err := Beside("intercom-no-such-tool"); err == nil {
		t.Error("Beside found a tool that does not exist")
	}
}
