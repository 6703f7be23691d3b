package e2e

// CLI habits (B14): version, bare usage, help examples and shell completion
// on all four binaries.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/internal/testenv"
)

var allBins = []string{"intercom", "intercom-broker", "agent-runs", "intercom-bridge"}

func TestCLIVersionOnEveryBinary(t *testing.T) {
	t.Parallel()
	h := newH(t)
	for _, bin := range allBins {
		r := fndRunBin(h, bin, "version")
		if r.Code != 0 || !strings.HasPrefix(r.Stdout, bin+" ") || !strings.Contains(r.Stdout, "(commit ") || !strings.Contains(r.Stdout, "go1.") || r.Stderr != "" {
			t.Errorf("%s version: exit %d stdout %q stderr %q", bin, r.Code, r.Stdout, r.Stderr)
		}
		r = fndRunBin(h, bin, "version", "--json")
		var in struct{ Version, Commit, Go, OS, Arch string }
		if err := json.Unmarshal([]byte(r.Stdout), &in); r.Code != 0 || err != nil || in.Version == "" || !strings.HasPrefix(in.Go, "go1.") || in.OS == "" || in.Arch == "" {
			t.Errorf("%s version --json: exit %d %q (%v)", bin, r.Code, r.Stdout, err)
		}
		r = fndRunBin(h, bin, "--version")
		if r.Code != 0 || !strings.HasPrefix(r.Stdout, bin+" ") || r.Stderr != "" {
			t.Errorf("%s --version: exit %d stdout %q stderr %q (want the version on stdout)", bin, r.Code, r.Stdout, r.Stderr)
		}
	}
	if fndExists(h.Home) {
		t.Errorf("version created %s: it must not need a broker or a state dir", h.Home)
	}
}

// TestCLIMakeBuildStampsEveryBinary: `make build VERSION=v9.9.9` stamps all
// four binaries (one stamp, package buildinfo, read through kongrun):
// --version, version and version --json all say v9.9.9.
func TestCLIMakeBuildStampsEveryBinary(t *testing.T) {
	t.Parallel()
	mk, err := exec.LookPath("make")
	testenv.Need(t, err == nil, "needs make: the Makefile's build target is what is tested")
	dir := t.TempDir()
	if out, err := exec.Command(mk, "-C", "..", "build", "VERSION=v9.9.9", "BINDIR="+dir).CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	for _, bin := range allBins {
		for _, args := range [][]string{{"--version"}, {"version"}} {
			out, err := exec.Command(filepath.Join(dir, bin), args...).Output()
			if want := bin + " v9.9.9 (commit "; err != nil || !strings.HasPrefix(string(out), want) {
				t.Errorf("%s %s: %q (%v), want it to start %q", bin, args[0], out, err, want)
			}
		}
		out, err := exec.Command(filepath.Join(dir, bin), "version", "--json").Output()
		var in struct{ Version string }
		if err != nil || json.Unmarshal(out, &in) != nil || in.Version != "v9.9.9" {
			t.Errorf("%s version --json: %q (%v), want version v9.9.9", bin, out, err)
		}
	}
}

func TestCLIBareCommandPrintsUsage(t *testing.T) {
	t.Parallel()
	h := newH(t)
	for _, bin := range []string{"intercom", "agent-runs", "intercom-bridge"} {
		r := fndRunBin(h, bin)
		if r.Code != 0 || !strings.HasPrefix(r.Stdout, "Usage: "+bin) || !strings.Contains(r.Stdout, "Examples:") || r.Stderr != "" {
			t.Errorf("bare %s: exit %d stdout %q stderr %q, want the short usage and 0", bin, r.Code, r.Stdout, r.Stderr)
		}
		if n := strings.Count(r.Stdout, "\n"); n > 30 {
			t.Errorf("bare %s prints %d lines; the short usage should be short", bin, n)
		}
	}
}

// completions asks bin, the way a shell does, what completes line.
func completions(t *testing.T, h *H, bin, line string) []string {
	t.Helper()
	c := exec.Command(filepath.Join(binDir, bin))
	c.Env = append(os.Environ(), "INTERCOM_HOME="+h.Home, "COMP_LINE="+line)
	out, err := c.Output()
	if err != nil {
		t.Fatalf("complete %q: %v", line, err)
	}
	return strings.Fields(string(out))
}

// Every visible command of every binary shows examples in its help; the
// command list comes from the completion protocol, so a new command cannot
// slip through.
func TestCLIEveryCommandHasExamples(t *testing.T) {
	t.Parallel()
	h := newH(t)
	for _, bin := range allBins {
		queue := [][]string{{}}
		seen := 0
		for len(queue) > 0 {
			path := queue[0]
			queue = queue[1:]
			line := strings.Join(append([]string{bin}, path...), " ") + " "
			var subs []string
			for _, w := range completions(t, h, bin, line) {
				if !strings.HasPrefix(w, "-") {
					subs = append(subs, w)
				}
			}
			if len(path) > 0 && len(subs) > 0 && path[len(path)-1] != "help" && path[len(path)-1] != "completion" {
				for _, s := range subs {
					queue = append(queue, append(append([]string{}, path...), s))
				}
				continue
			}
			if len(path) == 0 {
				for _, s := range subs {
					queue = append(queue, []string{s})
				}
				if len(subs) == 0 {
					t.Fatalf("%s offers no commands to complete", bin)
				}
			}
			r := fndRunBin(h, bin, append(append([]string{}, path...), "--help")...)
			seen++
			if r.Code != 0 || !strings.Contains(r.Stdout, "Examples:") {
				t.Errorf("%s %s --help: exit %d, no Examples: section\n%s", bin, strings.Join(path, " "), r.Code, r.Stdout)
			}
		}
		t.Logf("%s: %d help pages have examples", bin, seen)
		if seen < 4 {
			t.Errorf("%s: only %d help pages checked", bin, seen)
		}
	}
}

// The generated bash script loads in bash and registers completion that
// answers with the binary's commands and enum values.
func TestCLICompletionLoadsInBash(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	h := newH(t)
	for _, bin := range []string{"intercom", "agent-runs", "intercom-bridge"} {
		script := filepath.Join(t.TempDir(), bin+".bash")
		r := fndRunBin(h, bin, "completion", "bash")
		if r.Code != 0 {
			t.Fatalf("%s completion bash: exit %d %s", bin, r.Code, r.Stderr)
		}
		if err := os.WriteFile(script, []byte(r.Stdout), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("bash", "--norc", "--noprofile", "-c", "source "+script+" && complete -p "+bin).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "-C '"+filepath.Join(binDir, bin)+"' "+bin) {
			t.Fatalf("%s: bash could not load the script or registered no completion: %v\n%s\nscript:\n%s", bin, err, out, r.Stdout)
		}
	}
	if got := completions(t, h, "intercom", "intercom li"); strings.Join(got, " ") != "list" {
		t.Errorf("intercom li<TAB> = %q, want list", got)
	}
	if got := completions(t, h, "intercom", "intercom list --scope "); strings.Join(got, " ") != "project all" && strings.Join(got, " ") != "all project" {
		t.Errorf("intercom list --scope <TAB> = %q, want project and all", got)
	}
	if got := completions(t, h, "agent-runs", "agent-runs qu"); strings.Join(got, " ") != "questions" {
		t.Errorf("agent-runs qu<TAB> = %q, want questions", got)
	}
	for _, shell := range []string{"zsh", "fish"} {
		if r := fndRunBin(h, "intercom", "completion", shell); r.Code != 0 || !strings.Contains(r.Stdout, "intercom") {
			t.Errorf("intercom completion %s: exit %d %q", shell, r.Code, r.Stdout)
		}
	}
}

// tmuxStart runs a shell command line in a detached 100x30 tmux pane (a real
// terminal) with h's environment; capture returns the pane's text with its
// escape sequences (capture-pane -e). "__DONE__" follows the command's output.
func tmuxStart(t *testing.T, h *H, line string) (capture func() string) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed: terminal output tests need it (apt-get install -y tmux)")
	}
	sock := fmt.Sprintf("ic-tty-%d-%d", os.Getpid(), time.Now().UnixNano())
	tmux := func(a ...string) (string, error) {
		out, err := exec.Command("tmux", append([]string{"-L", sock}, a...)...).CombinedOutput()
		return string(out), err
	}
	script := fmt.Sprintf("cd %q && export INTERCOM_HOME=%q INTERCOM_SESSION= INTERCOM_SOCKET= GORACE=atexit_sleep_ms=0 PATH=%q:$PATH && %s; echo __DONE__; sleep 600",
		h.Cwd, h.Home, binDir, line)
	if out, err := tmux("new-session", "-d", "-s", "t", "-x", "100", "-y", "30", "sh", "-c", script); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = tmux("kill-server") })
	return func() string {
		out, _ := tmux("capture-pane", "-p", "-e", "-t", "t")
		return out
	}
}

// tmuxRun is tmuxStart waiting for the command to finish; it returns what
// the command left on the screen.
func tmuxRun(t *testing.T, h *H, line string) string {
	t.Helper()
	capture := tmuxStart(t, h, line)
	var screen string
	Eventually(t, 30*time.Second, func() bool {
		screen = capture()
		return strings.Contains(screen, "__DONE__")
	}, "%q to finish in tmux", line)
	return screen[:strings.Index(screen, "__DONE__")]
}

// B14: list is an aligned, coloured table on a terminal, plain with
// NO_COLOR, and keeps its machine formats when piped or with --json.
func TestListTableInTmux(t *testing.T) {
	t.Parallel()
	h := newH(t)
	fndNoIdleExit(h)
	h.Attach("--name", "worker")
	h.Attach("--name", "reviewer")
	h.OK("--session", "worker", "state", "tool:bash")

	screen := tmuxRun(t, h, "intercom list")
	plain := ansiRe.ReplaceAllString(screen, "")
	lines := strings.Split(plain, "\n")
	hdr := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "NAME") {
			hdr = i
		}
	}
	if hdr < 0 {
		t.Fatalf("no table header on the terminal:\n%s", plain)
	}
	for _, col := range []string{"TARGET", "STATUS", "PROJECT", "ASKS", "LAST ACTIVITY"} {
		if !strings.Contains(lines[hdr], col) {
			t.Fatalf("header %q lacks %s", lines[hdr], col)
		}
	}
	at := strings.Index(lines[hdr], "STATUS")
	rows := map[string]string{}
	for _, l := range lines[hdr+1:] {
		if f := strings.Fields(l); len(f) > 0 && (f[0] == "worker" || f[0] == "reviewer") {
			rows[f[0]] = l
			if len(l) <= at || l[at] == ' ' || l[at-1] != ' ' {
				t.Errorf("row %q: STATUS column not aligned at %d", l, at)
			}
		}
	}
	if !strings.Contains(rows["worker"], "tool:bash") || !strings.Contains(rows["reviewer"], "idle") {
		t.Fatalf("rows %v:\n%s", rows, plain)
	}
	if strings.Count(plain, "send steers") != 1 || strings.Contains(plain, "↳") {
		t.Fatalf("guidance is not printed once:\n%s", plain)
	}
	if !strings.Contains(screen, "\x1b[") {
		t.Fatalf("no colour on the terminal:\n%q", screen)
	}

	if nc := tmuxRun(t, h, "NO_COLOR=1 intercom list"); strings.Contains(nc, "\x1b[") || !strings.Contains(nc, "LAST ACTIVITY") {
		t.Fatalf("NO_COLOR=1: want the table without escape codes:\n%q", nc)
	}
	if piped := tmuxRun(t, h, "intercom list | cat"); strings.Contains(piped, "LAST ACTIVITY") || !strings.Contains(piped, "• worker") || !strings.Contains(piped, "↳") {
		t.Fatalf("piped list is not the line format:\n%s", piped)
	}
	js := ansiRe.ReplaceAllString(tmuxRun(t, h, "intercom --json list"), "")
	if strings.Contains(js, "LAST ACTIVITY") || !strings.Contains(js, `"sessions"`) {
		t.Fatalf("--json on a terminal is not JSON:\n%s", js)
	}
}

var ansiRe = regexp.MustCompile("\x1b\\[[0-9;:?]*[a-zA-Z]")

// B14: on a terminal, ask shows a live one-line status while it waits and
// erases it when the reply comes; with --json, or off a terminal, nothing.
func TestAskLiveStatusInTmux(t *testing.T) {
	t.Parallel()
	h := newH(t)
	fndNoIdleExit(h)
	worker, _ := h.Attach("--name", "worker")

	capture := tmuxStart(t, h, "intercom ask worker 'ready?'")
	Eventually(t, 30*time.Second, func() bool {
		return regexp.MustCompile(`waiting for worker… \d+s \(Ctrl-C cancels\)`).MatchString(capture())
	}, "the live status of the ask")
	if ev := worker.Event(20 * time.Second); ev["text"] != "ready?" {
		t.Fatalf("worker got %v", ev)
	}
	h.OK("--session", "worker", "reply", "yes")
	var screen string
	Eventually(t, 30*time.Second, func() bool { screen = capture(); return strings.Contains(screen, "__DONE__") }, "the ask to end")
	if !strings.Contains(screen, "Reply from worker") || strings.Contains(screen, "waiting for worker") {
		t.Fatalf("after the reply the status should be gone and the reply shown:\n%s", screen)
	}

	// --json on a terminal: no status.
	capture = tmuxStart(t, h, "intercom --json ask worker 'json?'")
	if ev := worker.Event(20 * time.Second); ev["text"] != "json?" {
		t.Fatalf("worker got %v", ev)
	}
	if sc := capture(); strings.Contains(sc, "waiting for") {
		t.Fatalf("--json ask shows a status:\n%s", sc)
	}
	h.OK("--session", "worker", "reply", "ok")
	Eventually(t, 30*time.Second, func() bool { return strings.Contains(capture(), "__DONE__") }, "the --json ask to end")
	if sc := capture(); strings.Contains(sc, "waiting for") || !strings.Contains(sc, `"ok":true`) {
		t.Fatalf("--json ask output:\n%s", sc)
	}

	// Off a terminal: no status either.
	p := h.Start("ask", "worker", "piped?")
	if ev := worker.Event(20 * time.Second); ev["text"] != "piped?" {
		t.Fatalf("worker got %v", ev)
	}
	h.OK("--session", "worker", "reply", "fine")
	select {
	case <-p.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("piped ask did not end")
	}
	if strings.Contains(p.Stderr(), "waiting for") {
		t.Fatalf("ask off a terminal wrote a status: %q", p.Stderr())
	}
}

// B14: agent-runs start --wait shows the same live status until the child ends.
func TestRunsStartWaitLiveStatusInTmux(t *testing.T) {
	t.Parallel()
	h := newH(t)
	fndNoIdleExit(h)
	h.Attach("--name", "planner")
	gate := filepath.Join(h.Cwd, "go-ahead")
	capture := tmuxStart(t, h, fmt.Sprintf("agent-runs -s planner start --agent w --wait -- sh -c 'while [ ! -e %s ]; do sleep 0.05; done; echo child finished'", gate))
	Eventually(t, 30*time.Second, func() bool {
		return regexp.MustCompile(`waiting for run [0-9a-f]+ \(w\)… \d+s`).MatchString(capture())
	}, "the live status of start --wait")
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var screen string
	Eventually(t, 30*time.Second, func() bool { screen = capture(); return strings.Contains(screen, "__DONE__") }, "start --wait to end")
	if !strings.Contains(screen, "child finished") || strings.Contains(screen, "waiting for run") {
		t.Fatalf("after the child ended the status should be gone and the result shown:\n%s", screen)
	}
}
