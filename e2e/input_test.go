package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// maxInputRSS bounds the peak resident memory of a command fed a huge or
// endless input (race-built binaries carry the race runtime's overhead; the
// input itself may add at most the 1 MiB message limit a few times over).
const maxInputRSS = 80 << 20

// rssHelperEnv makes the test binary a measuring wrapper: it runs its
// arguments as a command and writes the command's peak RSS to the file the
// variable names. (A child forked straight from the test process would
// report the test process's own high-water mark: Linux carries the peak of
// the memory a vfork child shares with its parent across exec.)
const rssHelperEnv = "E2E_RSS_HELPER_OUT"

func rssHelper(out string) int {
	c := exec.Command(os.Args[1], os.Args[2:]...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, rssHelperEnv+"=") {
			env = append(env, kv)
		}
	}
	c.Env = env
	err := c.Run()
	if c.ProcessState == nil {
		fmt.Fprintln(os.Stderr, "rss helper:", err)
		return 125
	}
	if ru, ok := c.ProcessState.SysUsage().(*syscall.Rusage); ok {
		_ = os.WriteFile(out, []byte(strconv.FormatInt(ru.Maxrss<<10, 10)), 0o600) // KiB on Linux
	}
	return c.ProcessState.ExitCode()
}

// runMeasured runs bin with stdin from in (nil: empty) and returns the
// result and the process's peak RSS in bytes (its rusage, through the
// measuring wrapper).
func (h *H) runMeasured(bin string, in *os.File, env []string, args ...string) (Result, int64) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := h.cmd(ctx, bin, args...)
	rssFile := filepath.Join(h.t.TempDir(), "rss")
	c.Path, c.Args = os.Args[0], append([]string{os.Args[0], c.Path}, args...)
	c.Env = append(c.Env, env...)
	c.Env = append(c.Env, rssHelperEnv+"="+rssFile)
	if in != nil {
		c.Stdin = in
	}
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		h.t.Fatalf("run %s %v: %v", bin, args, err)
	}
	data, err := os.ReadFile(rssFile)
	if err != nil {
		h.t.Fatalf("%s %v: no peak RSS measured: %v (stderr %q)", bin, args, err, errb.String())
	}
	rss, _ := strconv.ParseInt(string(data), 10, 64)
	return Result{out.String(), errb.String(), code}, rss
}

// oneLine fails unless s is exactly one line containing want.
func oneLine(t *testing.T, what, s, want string) {
	t.Helper()
	if strings.Count(s, "\n") != 1 || !strings.HasSuffix(s, "\n") || !strings.Contains(s, want) {
		t.Errorf("%s: stderr %q, want one line containing %q", what, s, want)
	}
}

// endlessFIFO makes a FIFO fed with zeros until its reader goes away.
func endlessFIFO(t *testing.T, dir string) string {
	t.Helper()
	sub, err := os.MkdirTemp(dir, "fifo-")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(sub, "endless.fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() {
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		_, _ = io.Copy(f, zeroReader{})
	}()
	return p
}

// sparseFile makes a 10 GB file that takes no disk space.
func sparseFile(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "sparse.log")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(10 << 30); err != nil {
		t.Fatal(err)
	}
	return p
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestEveryInputIsBounded feeds every input path a 10 GB sparse file,
// /dev/zero, an endless FIFO or endless stdin: each command refuses at once
// with one line naming the real size (or "over N bytes"), exit 2, and its
// peak RSS stays small.
func TestEveryInputIsBounded(t *testing.T) {
	t.Parallel()
	h := newH(t)
	dir := t.TempDir()
	sparse := sparseFile(t, dir)
	quietFIFO := filepath.Join(dir, "quiet.fifo") // no writer at all
	if err := syscall.Mkfifo(quietFIFO, 0o600); err != nil {
		t.Fatal(err)
	}
	child := []string{"INTERCOM_SUPERVISOR=planner", "INTERCOM_RUN_ID=a1b2c3d4", "INTERCOM_CHILD_AGENT=worker", "INTERCOM_CHILD_INDEX=0"}
	openIn := func(path string) *os.File {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	cases := []struct {
		name  string
		bin   string
		stdin string // a path, "" for none
		env   []string
		args  []string
		want  string
		code  int
	}{
		{"file /dev/zero", "intercom", "", nil, []string{"send", "worker", "--file", "/dev/zero", "x"}, "--file /dev/zero is over", 2},
		{"file 10 GB", "intercom", "", nil, []string{"send", "worker", "--file", sparse, "x"}, "is 10737418240 bytes", 2},
		{"file endless FIFO", "intercom", "", nil, []string{"send", "worker", "--file", endlessFIFO(t, dir), "x"}, "endless.fifo is over", 2},
		// A FIFO nobody writes reads as empty at once; the send then fails
		// for want of a recipient.
		{"file FIFO without writer", "intercom", "", nil, []string{"send", "worker", "--file", quietFIFO, "x"}, `no session matches "worker"`, 1},
		{"snippet /dev/zero", "intercom", "", nil, []string{"send", "worker", "--snippet", "z=/dev/zero", "x"}, "--snippet /dev/zero is over", 2},
		{"ask file 10 GB", "intercom", "", nil, []string{"ask", "worker", "--file", sparse, "x"}, "is 10737418240 bytes", 2},
		{"reply file /dev/zero", "intercom", "", nil, []string{"reply", "--file", "/dev/zero", "x"}, "is over", 2},
		{"stdin /dev/zero", "intercom", "/dev/zero", nil, []string{"send", "worker", "-"}, "stdin is over 1048576 bytes", 2},
		{"stdin 10 GB", "intercom", sparse, nil, []string{"send", "worker", "-"}, "stdin is 10737418240 bytes; max 1048576", 2},
		{"publish stdin /dev/zero", "intercom", "/dev/zero", nil, []string{"-s", "x", "publish", "t/x", "-"}, "stdin is over", 2},
		{"interview /dev/zero", "intercom", "", child, []string{"contact-supervisor", "--reason", "interview_request", "--interview", "/dev/zero"}, "is over", 2},
		{"interview stdin 10 GB", "intercom", sparse, child, []string{"contact-supervisor", "--reason", "interview_request", "--interview", "-"}, "is 10737418240 bytes", 2},
	}
	for _, tc := range cases {
		var in *os.File
		if tc.stdin != "" {
			in = openIn(tc.stdin)
		}
		res, rss := h.runMeasured(tc.bin, in, tc.env, tc.args...)
		if res.Code != tc.code {
			t.Errorf("%s: exit %d, want %d (stderr %q)", tc.name, res.Code, tc.code, res.Stderr)
		}
		oneLine(t, tc.name, res.Stderr, tc.want)
		t.Logf("%s: peak RSS %d KiB", tc.name, rss>>10)
		if rss > maxInputRSS {
			t.Errorf("%s: peak RSS %d MiB, want at most %d MiB", tc.name, rss>>20, maxInputRSS>>20)
		}
	}

	// config.json: a 10 GB file, then /dev/zero's endlessness through a FIFO.
	if err := os.MkdirAll(h.Home, 0o700); err != nil {
		t.Fatal(err)
	}
	type badConfig struct {
		make func(path string) error
		want string
	}
	for _, cfg := range []badConfig{
		{func(p string) error { return os.WriteFile(p, nil, 0o600) }, ""}, // placeholder replaced below
		{func(p string) error { return os.Truncate(p, 10<<30) }, "is 10737418240 bytes; max 1048576"},
		{func(p string) error { _ = os.Remove(p); return os.Symlink("/dev/zero", p) }, "is over 1048576 bytes"},
	} {
		if err := cfg.make(h.Layout.ConfigFile()); err != nil {
			t.Fatal(err)
		}
		if cfg.want == "" {
			continue
		}
		res, rss := h.runMeasured("intercom", nil, nil, "list")
		if res.Code != 2 {
			t.Errorf("config %s: exit %d, want 2", cfg.want, res.Code)
		}
		oneLine(t, "config.json", res.Stderr, cfg.want)
		if rss > maxInputRSS {
			t.Errorf("config: peak RSS %d MiB", rss>>20)
		}
		res, _ = h.runMeasured("agent-runs", nil, nil, "list")
		if res.Code != 2 || !strings.Contains(res.Stderr, cfg.want) {
			t.Errorf("agent-runs with that config: exit %d, stderr %q", res.Code, res.Stderr)
		}
	}
	_ = os.Remove(h.Layout.ConfigFile())
}

// TestOneDurationRule: every duration flag and config value follows the one
// rule (1ms to 7 days; 0 only where it has a documented meaning; never
// negative), with one clear line and exit 2, before anything else happens.
func TestOneDurationRule(t *testing.T) {
	t.Parallel()
	h := newH(t)
	for _, tc := range []struct {
		bin  string
		args []string
		want string // "" = accepted by the rule (the command may fail later)
	}{
		{"intercom", []string{"ask", "--timeout", "0", "w", "x"}, "--timeout: 0 is not allowed here"},
		{"intercom", []string{"ask", "--timeout", "-1s", "w", "x"}, "--timeout: -1s is negative"},
		{"intercom", []string{"ask", "--timeout=-1s", "w", "x"}, "--timeout: -1s is negative"},
		{"intercom", []string{"ask", "--timeout", "1000h", "w", "x"}, "--timeout: 1000h is longer than 7 days"},
		{"intercom", []string{"ask", "--timeout", "5", "w", "x"}, `--timeout: "5" is not a duration`},
		{"intercom", []string{"ask", "--timeout", "1ns", "w", "x"}, "shorter than 1ms"},
		{"intercom", []string{"inbox", "--wait=-1s"}, "--wait: -1s is negative"},
		{"intercom", []string{"inbox", "--wait", "1000h"}, "--wait: 1000h is longer than 7 days"},
		{"intercom", []string{"wait", "--timeout", "0"}, "--timeout: 0 is not allowed here"},
		{"intercom", []string{"wait", "--timeout", "-5m"}, "--timeout: -5m is negative"},
		{"agent-runs", []string{"stop", "r1", "--grace", "-1s"}, "--grace: -1s is negative"},
		{"agent-runs", []string{"stop", "r1", "--grace", "9999h"}, "--grace: 9999h is longer than 7 days"},
		{"intercom-broker", []string{"--idle-exit", "-5s"}, "--idle-exit: -5s is negative"},
		{"intercom-broker", []string{"--idle-exit", "2000h"}, "--idle-exit: 2000h is longer than 7 days"},
	} {
		res, _ := h.runMeasured(tc.bin, nil, nil, tc.args...)
		if res.Code != 2 {
			t.Errorf("%s %v: exit %d, want 2 (stderr %q)", tc.bin, tc.args, res.Code, res.Stderr)
		}
		oneLine(t, strings.Join(tc.args, " "), res.Stderr, tc.want)
	}
	for key, body := range map[string]string{
		`"askTimeoutMs" 0ms`:               `{"askTimeoutMs": 0}`,
		`"sendTimeoutMs" -1ms is negative`: `{"sendTimeoutMs": -1}`,
		`"listTimeoutMs" 1e+12ms`:          `{"listTimeoutMs": 1e12}`,
		`"idleExitMs" -5ms is negative`:    `{"idleExitMs": -5}`,
		`"forgetAfterMs" 1.5ms`:            `{"forgetAfterMs": 1.5}`,
	} {
		h.WriteConfig(body)
		res := h.Run("list")
		want := key
		if strings.Contains(key, " 0ms") {
			want = `"askTimeoutMs" 0 is not allowed here`
		}
		if res.Code != 2 {
			t.Errorf("config %s: exit %d, want 2", body, res.Code)
		}
		oneLine(t, body, res.Stderr, want)
	}
	// Documented zeros are accepted: idle-exit 0 runs forever, inbox --wait 0
	// does not wait.
	h.WriteConfig(`{"idleExitMs": 0, "forgetAfterMs": 0}`)
	if res := h.Run("--session", "nobody", "inbox", "--wait", "0"); res.Code != 1 || !strings.Contains(res.Stderr, "nobody") {
		t.Errorf("inbox --wait 0: exit %d, stderr %q; want the unknown session refused, not the duration", res.Code, res.Stderr)
	}
}

// TestAskInterruptedExits130: Ctrl-C on a waiting ask exits 130 with one
// line, and the ask is withdrawn from the recipient's pending list.
func TestAskInterruptedExits130(t *testing.T) {
	t.Parallel()
	h := newH(t)
	h.Attach("--name", "worker")
	for _, jsonOut := range []bool{false, true} {
		args := []string{"ask", "worker", "Ready?"}
		if jsonOut {
			args = append([]string{"--json"}, args...)
		}
		ask := h.Start(args...)
		Eventually(t, 20*time.Second, func() bool { return len(pendingAsks(h, "worker")) == 1 }, "the ask to be pending")
		_ = ask.Cmd.Process.Signal(os.Interrupt)
		<-ask.Done()
		if code := ask.Cmd.ProcessState.ExitCode(); code != 130 {
			t.Fatalf("interrupted ask exited %d, want 130; stderr %q", code, ask.Stderr())
		}
		if jsonOut {
			line, _ := ask.Line(time.Second)
			if !strings.Contains(line, `"code":"interrupted"`) || !strings.Contains(line, "withdrawn") || ask.Stderr() != "" {
				t.Errorf("--json interrupted ask printed %q, stderr %q", line, ask.Stderr())
			}
		} else {
			oneLine(t, "interrupted ask", ask.Stderr(), "withdrawn")
		}
		if n := len(pendingAsks(h, "worker")); n != 0 {
			t.Fatalf("%d asks still pending after the interrupted ask", n)
		}
	}
}

func pendingAsks(h *H, session string) []map[string]any {
	var out struct {
		Asks []map[string]any `json:"asks"`
	}
	h.JSON(&out, "--session", session, "pending")
	return out.Asks
}
