//go:build harness

package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// World is one user's machine for a test: a HOME in a temp dir, an
// INTERCOM_HOME in a temp dir, and the intercom binaries under test on PATH.
// Agents of one world share the user's harness settings and broker.
type World struct {
	t            *testing.T
	Root         string
	Home         string // HOME
	IntercomHome string // INTERCOM_HOME
	Env          []string
	// CodexHooksTrusted runs Codex without --dangerously-bypass-hook-trust:
	// the hooks run only once trusted (TrustCodexHooks).
	CodexHooksTrusted bool
	// ClaudeBin is the Claude Code to run ("" for claudeBin, the current
	// release; claudeOldestBin for the oldest supported).
	ClaudeBin string
	// ClaudeViaNode starts Claude Code through its node launcher
	// (cli-wrapper.cjs), one more process above the native binary.
	ClaudeViaNode bool
	// CodexNative starts Codex's native binary directly (as a standalone
	// install has it), without the npm launcher above it.
	CodexNative bool
}

// NewWorld makes a fresh world; its broker and every process it started are
// stopped at cleanup, and its files are kept (and named) when the test fails.
func NewWorld(t *testing.T) *World {
	t.Helper()
	root, err := os.MkdirTemp("", "ic-harness-")
	if err != nil {
		t.Fatal(err)
	}
	w := &World{t: t, Root: root, Home: filepath.Join(root, "home"), IntercomHome: filepath.Join(root, "intercom")}
	for _, d := range []string{w.Home, w.IntercomHome} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// A login shell (Codex runs `bash -lc`) resets PATH from /etc/profile;
	// like a real user's, this profile puts intercom on it.
	profile := "export PATH=" + binDir + ":$PATH\n"
	for _, f := range []string{".profile", ".bashrc"} {
		if err := os.WriteFile(filepath.Join(w.Home, f), []byte(profile), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w.Env = cleanEnv(
		"HOME="+w.Home,
		"INTERCOM_HOME="+w.IntercomHome,
		"PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"XDG_CONFIG_HOME=", "XDG_STATE_HOME=", "XDG_CACHE_HOME=", "XDG_DATA_HOME=",
		"GORACE=atexit_sleep_ms=0",
	)
	t.Cleanup(func() {
		w.stopLeftovers()
		if t.Failed() || keep {
			t.Logf("world kept for inspection: %s", root)
			return
		}
		_ = os.RemoveAll(root)
	})
	return w
}

// keep (HARNESS_KEEP=1) keeps every world's files, logs and recorded
// model requests, also when the test passes.
var keep = os.Getenv("HARNESS_KEEP") != ""

// cleanEnv is the test process's environment without anything that would
// leak the developer's own intercom, harness or credentials into a run,
// with set applied on top.
func cleanEnv(set ...string) []string {
	drop := func(k string) bool {
		for _, p := range []string{"INTERCOM_", "ANTHROPIC_", "CLAUDE", "CODEX_", "OPENAI_", "GEMINI_", "GOOGLE_", "XDG_"} {
			if strings.HasPrefix(k, p) {
				return true
			}
		}
		return k == "HOME" || k == "PATH"
	}
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !drop(k) {
			out = append(out, kv)
		}
	}
	return append(out, set...)
}

// Result of a finished command.
type Result struct {
	Stdout, Stderr string
	Code           int
}

// Intercom runs the intercom CLI under test in dir ("" = the world root)
// with extra environment, 60 s at most.
func (w *World) Intercom(dir string, env []string, args ...string) Result {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, filepath.Join(binDir, "intercom"), args...)
	c.Env = append(append([]string(nil), w.Env...), env...)
	c.Dir = dir
	if dir == "" {
		c.Dir = w.Root
	}
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			return Result{out.String(), fmt.Sprintf("run intercom %v: %v", args, err), -1}
		}
		code = ee.ExitCode()
	}
	return Result{out.String(), errb.String(), code}
}

// OK runs intercom and fails the test unless it exits 0.
func (w *World) OK(args ...string) string {
	w.t.Helper()
	r := w.Intercom("", nil, args...)
	if r.Code != 0 {
		w.t.Fatalf("intercom %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.Code, r.Stdout, r.Stderr)
	}
	return r.Stdout
}

// Session is one row of `intercom list --json`.
type Session struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Connected bool   `json:"connected"`
	Cwd       string `json:"cwd"`
	Status    string `json:"status"`
}

// Sessions is `intercom list --all --json`, disconnected sessions included.
func (w *World) Sessions() []Session {
	w.t.Helper()
	rows, err := w.listSessions()
	if err != nil {
		w.t.Fatal(err)
	}
	return rows
}

// awaitStatus waits until session id reports status (idle: it accepts
// asks, the broker derives that from its state).
func (w *World) awaitStatus(id, status string) {
	w.t.Helper()
	Await(w.t, msgTimeout, func() bool {
		for _, s := range w.Sessions() {
			if s.ID == id && s.Status == status {
				return true
			}
		}
		return false
	}, "session %s to report %s", id, status)
}

func (w *World) listSessions() ([]Session, error) {
	r := w.Intercom("", nil, "--json", "list", "--scope", "all", "--all")
	if r.Code != 0 {
		return nil, fmt.Errorf("intercom list: exit %d: %s", r.Code, r.Stderr)
	}
	var out struct {
		Sessions []Session `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
		return nil, fmt.Errorf("decode intercom list: %w\n%s", err, r.Stdout)
	}
	return out.Sessions, nil
}

// Snapshot holds the sessions listed at one moment of an agent's turn.
type Snapshot struct {
	mu   sync.Mutex
	rows []Session
}

// Rows returns what was listed.
func (s *Snapshot) Rows() []Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rows
}

// SnapshotIn is a turn's Before that records the sessions whose cwd is dir
// at that moment (a failure is a test error; the turn goes on).
func (w *World) SnapshotIn(dir string, into *Snapshot) func(*Request) {
	return func(*Request) {
		rows, err := w.listSessions()
		if err != nil {
			w.t.Error(err)
			return
		}
		into.mu.Lock()
		into.rows = inDir(rows, dir)
		into.mu.Unlock()
	}
}

func inDir(rows []Session, dir string) []Session {
	var out []Session
	for _, s := range rows {
		if s.Cwd == dir {
			out = append(out, s)
		}
	}
	return out
}

// stopLeftovers kills what the world's agents left running (brokers,
// session holders): every process whose command line or environment names
// a path inside the world's root.
func (w *World) stopLeftovers() {
	for _, pid := range pidsMentioning(w.Root + "/") {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// pidsMentioning lists this user's other processes whose command line or
// environment holds s.
func pidsMentioning(s string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid := atoi(e.Name())
		if pid <= 0 || pid == os.Getpid() {
			continue
		}
		for _, f := range []string{"cmdline", "environ"} {
			data, err := os.ReadFile(filepath.Join("/proc", e.Name(), f))
			if err == nil && bytes.Contains(data, []byte(s)) {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// Await polls cond until it holds or timeout passes, then fails the test.
func Await(t testing.TB, timeout time.Duration, cond func() bool, what string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for "+what, append([]any{timeout}, args...)...)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
