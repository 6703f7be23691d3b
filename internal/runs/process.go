package runs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/intercom-dev/intercom/internal/detach"
	"github.com/intercom-dev/intercom/internal/procinfo"
)

// ChildEnv returns the environment a child is started with: the saved
// launch environment plus the supervision variables (ours and the
// PI_SUBAGENT_* equivalents).
func ChildEnv(r *Run, home string) []string {
	drop := map[string]bool{}
	vars := map[string]string{
		"INTERCOM_HOME":                   home,
		"INTERCOM_SUPERVISOR":             r.Supervisor,
		"INTERCOM_RUN_ID":                 r.ID,
		"INTERCOM_CHILD_AGENT":            r.Agent,
		"INTERCOM_CHILD_INDEX":            strconv.Itoa(r.Index),
		"INTERCOM_SESSION":                r.ChildSessionID,
		"INTERCOM_CHILD_SESSION":          r.ChildSession,
		"PI_SUBAGENT_ORCHESTRATOR_TARGET": r.Supervisor,
		"PI_SUBAGENT_RUN_ID":              r.ID,
		"PI_SUBAGENT_CHILD_AGENT":         r.Agent,
		"PI_SUBAGENT_CHILD_INDEX":         strconv.Itoa(r.Index),
	}
	if r.AnswerFile != "" {
		vars["INTERCOM_ANSWER_FILE"] = r.AnswerFile
	}
	for k := range vars {
		drop[k] = true
	}
	drop["INTERCOM_ANSWER_FILE"] = true
	drop["INTERCOM_SOCKET"] = false
	var env []string
	for _, kv := range r.Env {
		k, _, _ := strings.Cut(kv, "=")
		if !drop[k] {
			env = append(env, kv)
		}
	}
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	return env
}

// EnvKeys lists the keys of an environment.
func EnvKeys(env []string) []string {
	keys := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		keys = append(keys, k)
	}
	return keys
}

// Launcher starts the detached owner of run id (package detach).
type Launcher func(id string) (*detach.Child, error)

// OwnerLauncher is the Launcher that runs `exe own RUN` (exe is agent-runs)
// for the runs in st, with INTERCOM_HOME=home and the owner's output in the
// run's owner.log. The owner reports readiness once it has recorded the
// launch (running, or failed).
func OwnerLauncher(exe, home string, st Store) Launcher {
	return func(id string) (*detach.Child, error) {
		child, err := detach.Start(detach.Spec{Path: exe, Args: []string{"own", id}, Dir: "/",
			Env: append(os.Environ(), "INTERCOM_HOME="+home), Log: filepath.Join(st.RunDir(id), "owner.log")})
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
func Tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(fi.Size()-n, 0)
	buf := make([]byte, fi.Size()-off)
	_, _ = f.ReadAt(buf, off)
	return string(buf)
}
