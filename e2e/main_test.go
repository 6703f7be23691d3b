// Package e2e holds black-box tests: they build the real binaries once and
// drive them as a user would, each test with its own INTERCOM_HOME, so its
// own broker, socket and Badger store.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/internal/paths"
)

var binDir string

func TestMain(m *testing.M) {
	if out := os.Getenv(rssHelperEnv); out != "" {
		os.Exit(rssHelper(out)) // a measuring wrapper, not a test run (input_test.go)
	}
	dir, err := os.MkdirTemp("", "intercom-e2e-bin-")
	if err != nil {
		panic(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		panic(err)
	}
	if coverDir != "" {
		if err := os.Setenv("GOCOVERDIR", coverDir); err != nil {
			panic(err)
		}
	}
	build := exec.Command("go", buildArgs(dir)...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build binaries:", err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// coverDir is INTERCOM_E2E_COVERDIR, set when the suite measures coverage
// (make cover): the binaries are then built with -cover, and TestMain points
// GOCOVERDIR there for every process the tests start, so each one writes its
// counters there when it exits. (go test -cover replaces GOCOVERDIR in the
// test's own environment, hence a variable of our own.)
var coverDir = os.Getenv("INTERCOM_E2E_COVERDIR")

// buildArgs are the go build arguments for the five binaries: -race unless
// E2E_NORACE is set, -cover over the whole module when coverDir is set.
func buildArgs(dir string) []string {
	args := []string{"build"}
	if os.Getenv("E2E_NORACE") == "" {
		args = append(args, "-race")
	}
	if coverDir != "" {
		args = append(args, "-cover", "-covermode=atomic", "-coverpkg=github.com/intercom-dev/intercom/...")
	}
	return append(args, "-o", dir+"/", "../cmd/intercom", "../cmd/intercom-hook", "../cmd/intercom-broker", "../cmd/agent-runs", "../cmd/intercom-bridge")
}

// H is one isolated intercom installation: a home, its socket, its broker.
type H struct {
	t      *testing.T
	Home   string
	Layout paths.Layout
	Cwd    string
	Env    []string
	mu     sync.Mutex
	procs  []*Proc
}

// newH makes a fresh home. The broker it spawns is killed at cleanup.
func newH(t *testing.T) *H {
	t.Helper()
	root, err := os.MkdirTemp("", "ic-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	return newHIn(t, root, filepath.Join(root, "home"), nil)
}

// newHIn makes an H whose home is home, working in root. At cleanup its
// processes and broker are killed, broker.log is shown if the test failed,
// release runs (an unmount, say; may be nil), and root and the socket
// directory are removed.
func newHIn(t *testing.T, root, home string, release func()) *H {
	t.Helper()
	l, err := paths.Resolve(home, "")
	if err != nil {
		t.Fatal(err)
	}
	h := &H{t: t, Home: home, Layout: l, Cwd: root}
	t.Cleanup(func() {
		h.mu.Lock()
		procs := h.procs
		h.mu.Unlock()
		for _, p := range procs {
			p.Stop()
		}
		h.StopBroker()
		if t.Failed() {
			if data, err := os.ReadFile(l.BrokerLog()); err == nil {
				t.Logf("broker.log:\n%s", tail(string(data), 60))
			}
		}
		if release != nil {
			release()
		}
		os.RemoveAll(root)
		os.RemoveAll(l.SocketDir())
	})
	return h
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// WriteConfig writes config.json.
func (h *H) WriteConfig(body string) {
	h.t.Helper()
	if err := os.MkdirAll(h.Home, 0o700); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(h.Layout.ConfigFile(), []byte(body), 0o600); err != nil {
		h.t.Fatal(err)
	}
}

func (h *H) cmd(ctx context.Context, bin string, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, filepath.Join(binDir, bin), args...)
	// atexit_sleep_ms=0: race-built binaries otherwise sleep 1 s at exit.
	c.Env = append(os.Environ(), "INTERCOM_HOME="+h.Home, "INTERCOM_SESSION=", "INTERCOM_SOCKET=", "GORACE=atexit_sleep_ms=0")
	c.Env = append(c.Env, h.Env...)
	c.Dir = h.Cwd
	return c
}

// Result of a finished command.
type Result struct {
	Stdout, Stderr string
	Code           int
}

// Run runs intercom to completion (30 s limit).
func (h *H) Run(args ...string) Result {
	h.t.Helper()
	return h.RunIn(h.Cwd, "", args...)
}

// RunIn runs intercom in dir with stdin.
func (h *H) RunIn(dir, stdin string, args ...string) Result {
	h.t.Helper()
	return h.runBinary("intercom", dir, stdin, args)
}

// runBinary runs one of the built binaries in dir with stdin and returns
// its output and exit code; failing to start it fails the test.
func (h *H) runBinary(bin, dir, stdin string, args []string) Result {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := h.cmd(ctx, bin, args...)
	c.Dir = dir
	c.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			h.t.Fatalf("run %s %v: %v", bin, args, err)
		}
		code = ee.ExitCode()
	}
	return Result{out.String(), errb.String(), code}
}

// OK runs intercom and fails the test unless it exits 0.
func (h *H) OK(args ...string) string {
	h.t.Helper()
	r := h.Run(args...)
	if r.Code != 0 {
		h.t.Fatalf("intercom %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.Code, r.Stdout, r.Stderr)
	}
	return r.Stdout
}

// JSON runs intercom --json and decodes stdout into v.
func (h *H) JSON(v any, args ...string) {
	h.t.Helper()
	out := h.OK(append([]string{"--json"}, args...)...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		h.t.Fatalf("decode output of %v: %v\n%s", args, err, out)
	}
}

// Proc is a long-running process whose stdout lines are collected.
type Proc struct {
	t     *testing.T
	Cmd   *exec.Cmd
	lines chan string
	done  chan struct{}
	errb  *bytes.Buffer
}

// Start starts intercom with args in the background.
func (h *H) Start(args ...string) *Proc {
	h.t.Helper()
	return h.StartBin("intercom", args...)
}

// StartBin starts any of the built binaries.
func (h *H) StartBin(bin string, args ...string) *Proc {
	h.t.Helper()
	return h.startCmd(h.cmd(context.Background(), bin, args...))
}

// startCmd starts c (made by h.cmd) in the background, collecting its
// stdout lines; it is killed at cleanup.
func (h *H) startCmd(c *exec.Cmd) *Proc {
	h.t.Helper()
	stdout, err := c.StdoutPipe()
	if err != nil {
		h.t.Fatal(err)
	}
	p := &Proc{t: h.t, Cmd: c, lines: make(chan string, 100000), done: make(chan struct{}), errb: &bytes.Buffer{}}
	c.Stderr = &syncBuf{b: p.errb}
	if err := c.Start(); err != nil {
		h.t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 4<<20), 4<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		_ = c.Wait()
		close(p.done)
	}()
	h.mu.Lock()
	h.procs = append(h.procs, p)
	h.mu.Unlock()
	return p
}

type syncBuf struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// Line waits for the next stdout line.
func (p *Proc) Line(timeout time.Duration) (string, bool) {
	select {
	case l := <-p.lines:
		return l, true
	case <-time.After(timeout):
		return "", false
	}
}

// Event waits for the next JSON line and decodes it.
func (p *Proc) Event(timeout time.Duration) map[string]any {
	p.t.Helper()
	for {
		l, ok := p.Line(timeout)
		if !ok {
			p.t.Fatalf("no event within %s from %v; stderr: %s", timeout, p.Cmd.Args, p.Stderr())
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			p.t.Fatalf("not JSON from %v: %q", p.Cmd.Args, l)
		}
		return ev
	}
}

// NoEvent asserts that no line arrives within d. A fixed window can pass
// falsely; prefer an ordering barrier (a marker that must be the next
// event) or durable state (a trace, an outbox), then NoneBuffered.
func (p *Proc) NoEvent(d time.Duration) {
	p.t.Helper()
	if l, ok := p.Line(d); ok {
		p.t.Fatalf("unexpected output from %v: %s", p.Cmd.Args, l)
	}
}

// NoneBuffered asserts that the process has printed no line that the test
// has not read yet: absence up to now, after a causal barrier.
func (p *Proc) NoneBuffered() {
	p.t.Helper()
	select {
	case l := <-p.lines:
		p.t.Fatalf("unexpected output from %v: %s", p.Cmd.Args, l)
	default:
	}
}

// Stderr returns what the process wrote to stderr so far.
func (p *Proc) Stderr() string {
	s := p.Cmd.Stderr.(*syncBuf)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Signal sends sig and waits for the process to end.
func (p *Proc) Signal(sig syscall.Signal) {
	_ = p.Cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.t.Errorf("process %v did not exit after %v", p.Cmd.Args, sig)
		_ = p.Cmd.Process.Kill()
	}
}

// Kill ends the process at once.
func (p *Proc) Kill() {
	p.t.Helper()
	_ = p.Cmd.Process.Kill()
	Await(p.t, p.done, 30*time.Second, "%v to exit after SIGKILL (its stdout still open?)", p.Cmd.Args)
}

// ExitCode waits up to timeout for the process to exit and returns its
// exit status.
func (p *Proc) ExitCode(timeout time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.t.Fatalf("%v still running after %s; stderr: %s", p.Cmd.Args, timeout, p.Stderr())
	}
	return p.Cmd.ProcessState.ExitCode()
}

// Stop ends the process at cleanup: at once (SIGKILL), or, when the suite
// measures coverage, with SIGTERM first so that the process exits through
// main and writes its coverage counters (SIGKILL after 10 s).
func (p *Proc) Stop() {
	if coverDir != "" {
		_ = p.Cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
			return
		case <-time.After(10 * time.Second):
		}
	}
	p.Kill()
}

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Attach starts `intercom attach --json` with extra args and returns it with
// its first event (id, name).
func (h *H) Attach(args ...string) (*Proc, map[string]any) {
	h.t.Helper()
	p := h.Start(append([]string{"attach", "--json"}, args...)...)
	ev := p.Event(20 * time.Second)
	if ev["event"] != "attached" || ev["id"] == "" {
		h.t.Fatalf("attach: first event %v", ev)
	}
	return p, ev
}

// BrokerPid returns the pid recorded in broker.pid, or 0.
func (h *H) BrokerPid() int {
	data, err := os.ReadFile(h.Layout.PidFile())
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(data), "\n", 2)[0]))
	return pid
}

// KillBroker SIGKILLs the broker of this home, if any, and waits for it.
func (h *H) KillBroker() {
	for _, pid := range h.BrokerPids() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		Eventually(h.t, 10*time.Second, func() bool { return !alive(pid) }, "broker %d to die", pid)
	}
}

// StopBroker ends the brokers of this home at cleanup: KillBroker, or, when
// the suite measures coverage, SIGTERM first so each broker writes its
// coverage counters on its way out (SIGKILL after 10 s).
func (h *H) StopBroker() {
	if coverDir != "" {
		for _, pid := range h.BrokerPids() {
			_ = syscall.Kill(pid, syscall.SIGTERM)
			for deadline := time.Now().Add(10 * time.Second); alive(pid) && time.Now().Before(deadline); {
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
	h.KillBroker()
}

// BrokerPids lists running intercom-broker processes serving this home.
func (h *H) BrokerPids() []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if !strings.HasSuffix(args[0], "intercom-broker") || !alive(pid) {
			continue
		}
		for i, a := range args {
			if a == "--home" && i+1 < len(args) && args[i+1] == h.Home {
				out = append(out, pid)
			}
		}
	}
	return out
}

// alive reports whether pid runs and is not a zombie. A killed process's
// main thread is a zombie while its other threads are still exiting, and
// its files (a broker's listening socket) close only with the last of
// them: until then it still counts as alive.
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i <= 0 || len(s) <= i+2 {
		return false
	}
	if s[i+2] != 'Z' {
		return true
	}
	threads, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	return err == nil && len(threads) > 1
}

// Eventually polls cond every 20 ms until it holds or timeout passes.
func Eventually(t testing.TB, timeout time.Duration, cond func() bool, what string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for "+what, append([]any{timeout}, args...)...)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Await waits until done is closed, failing the test after timeout.
func Await(t testing.TB, done <-chan struct{}, timeout time.Duration, what string, args ...any) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(timeout):
		t.Fatalf("timed out after %s waiting for "+what, append([]any{timeout}, args...)...)
	}
}

// AwaitGroup is wg.Wait, failing the test after timeout.
func AwaitGroup(t testing.TB, wg *sync.WaitGroup, timeout time.Duration, what string, args ...any) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	Await(t, done, timeout, what, args...)
}

// Sessions runs list --json with args and returns the rows.
func (h *H) Sessions(args ...string) []map[string]any {
	h.t.Helper()
	var out struct {
		Sessions []map[string]any `json:"sessions"`
	}
	h.JSON(&out, append([]string{"list"}, args...)...)
	return out.Sessions
}

// Row finds the session named name in rows.
func Row(rows []map[string]any, name string) map[string]any {
	for _, r := range rows {
		if r["name"] == name {
			return r
		}
	}
	return nil
}

// Runs runs agent-runs to completion in h.Cwd (30 s limit).
func (h *H) Runs(args ...string) Result {
	h.t.Helper()
	return h.RunsIn(h.Cwd, args...)
}

// RunsIn runs agent-runs in dir to completion (30 s limit). Child scripts
// started by it find the built binaries when h.Env puts binDir on PATH (see
// h.BinOnPath).
func (h *H) RunsIn(dir string, args ...string) Result {
	h.t.Helper()
	return h.runBinary("agent-runs", dir, "", args)
}

// BinOnPath puts binDir first on PATH for every command h runs (and so for
// the children agent-runs starts, which inherit its environment).
func (h *H) BinOnPath() {
	h.Env = append(h.Env, "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// procState is the state letter of /proc/pid/stat (R, S, T, Z...);
// 0 where there is no /proc (the fault tests that use it are Linux-only).
func procState(pid int) byte {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || len(s) < i+3 {
		return 0
	}
	return s[i+2]
}

// mustJSON marshals v or fails the test.
func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
