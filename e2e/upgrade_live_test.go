package e2e

// Upgrading while agents run (docs/install.md): the previous release's
// binaries (built by the test from git) run a broker and two holders; the
// new binaries are installed over them, as `make install` does; the new
// CLI talks to the old broker; the old broker exits and the next client
// starts the new one from the same path, which takes over the store (format
// 1 → 2) while the old holders keep running; a sender keeps sending through
// all of it. Every send that was acknowledged is delivered exactly once.

import (
	"context"
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

// upgradeFrom is the previous release the test upgrades from: the last
// commit with store format 1 (before dc33f02). UPGRADE_FROM overrides it.
const upgradeFrom = "7d8dc512a49fd50a1218f8cf191f2be2463e2125"

// oldBinaries builds intercom and intercom-broker at rev (cached by commit
// under the user cache dir) and returns their directory. It extracts the
// tree with git archive: the repository is not touched. Tests that run in
// parallel share one build (oldBuildMu); another test process building the
// same commit at the same time builds into its own directory, and the first
// rename wins.
func oldBinaries(t *testing.T, rev string) string {
	t.Helper()
	oldBuildMu.Lock()
	defer oldBuildMu.Unlock()
	repo, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not a git checkout (%v): cannot build the previous release", err)
	}
	top := strings.TrimSpace(string(repo))
	full, err := exec.Command("git", "-C", top, "rev-parse", "--verify", rev+"^{commit}").Output()
	if err != nil {
		t.Skipf("commit %s is not in this clone (shallow?): %v", rev, err)
	}
	commit := strings.TrimSpace(string(full))
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "intercom-e2e", "upgrade-"+commit[:12])
	if _, err := os.Stat(filepath.Join(dir, "intercom-broker")); err == nil {
		return dir
	}
	src := t.TempDir()
	archive := exec.Command("sh", "-c", `git -C "$1" archive --format=tar "$2" | tar -x -C "$3"`, "sh", top, commit, src)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("extract %s: %v\n%s", commit, err, out)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".tmp")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	build := exec.Command("go", "build", "-o", tmp+"/", "./cmd/intercom", "./cmd/intercom-broker")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", commit, err, out)
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another process renamed its build there first: use that one.
		if _, serr := os.Stat(filepath.Join(dir, "intercom-broker")); serr != nil {
			t.Fatalf("install the build of %s: %v", commit, err)
		}
	}
	return dir
}

// oldBuildMu makes parallel tests of one process wait for one build of the
// previous release instead of racing for its directory.
var oldBuildMu sync.Mutex

// upgInstall copies the named binaries from src into dst the way an
// installer does: a new file renamed over the old one, so running
// processes keep their old program.
func upgInstall(t *testing.T, src, dst string, names ...string) {
	t.Helper()
	for _, n := range names {
		in, err := os.Open(filepath.Join(src, n))
		if err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(dst, "."+n+".new")
		out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.Copy(out, in)
		in.Close()
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp, filepath.Join(dst, n))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// upgCmd is h.cmd running the binary at path.
func upgCmd(h *H, ctx context.Context, path string, args ...string) *exec.Cmd {
	c := h.cmd(ctx, "intercom", args...)
	c.Path, c.Args[0] = path, path
	return c
}

// upgRun runs the intercom at path to completion.
func upgRun(t *testing.T, h *H, path string, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := upgCmd(h, ctx, path, args...)
	var out, errb strings.Builder
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %v: %v", path, args, err)
	}
	return Result{out.String(), errb.String(), code}
}

// upgWorksOrSaysWhy asserts that a command either worked or failed with one
// line on stderr that says what to do.
func upgWorksOrSaysWhy(t *testing.T, what string, r Result) {
	t.Helper()
	if r.Code == 0 {
		return
	}
	line := strings.TrimSpace(r.Stderr)
	if strings.Contains(line, "\n") || line == "" {
		t.Fatalf("%s: exit %d with stderr %q: want success or one line saying what to do", what, r.Code, r.Stderr)
	}
	t.Logf("%s failed with: %s", what, line)
}

// upgExe is the program a process runs ("… (deleted)" once replaced).
func upgExe(pid int) string {
	p, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return p
}

func TestUpgradeWhileAgentsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the previous release")
	}
	t.Parallel()
	rev := upgradeFrom
	if r := os.Getenv("UPGRADE_FROM"); r != "" {
		rev = r
	}
	old := oldBinaries(t, rev)
	h := newH(t)
	inst := filepath.Join(h.Cwd, "bin")
	if err := os.MkdirAll(inst, 0o755); err != nil {
		t.Fatal(err)
	}
	upgInstall(t, old, inst, "intercom", "intercom-broker")
	cli := filepath.Join(inst, "intercom")

	// The previous release runs: its broker, two holders.
	holderA := h.startCmd(upgCmd(h, context.Background(), cli, "attach", "--json", "--name", "a"))
	if ev := holderA.Event(30 * time.Second); ev["event"] != "attached" {
		t.Fatalf("old holder a: %v", ev)
	}
	holderB := h.startCmd(upgCmd(h, context.Background(), cli, "attach", "--json", "--name", "b"))
	if ev := holderB.Event(30 * time.Second); ev["event"] != "attached" {
		t.Fatalf("old holder b: %v", ev)
	}
	oldBroker := h.BrokerPid()
	if exe := upgExe(oldBroker); exe != filepath.Join(inst, "intercom-broker") {
		t.Fatalf("broker runs %q, want the installed old one", exe)
	}

	// A sender keeps sending to b through the whole upgrade, each send a new
	// process of whatever intercom is installed now.
	var mu sync.Mutex
	accepted := map[string]bool{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			text := fmt.Sprintf("upgrade-msg-%d", i)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			c := upgCmd(h, ctx, cli, "--session", "a", "send", "b", text)
			err := c.Run()
			cancel()
			if err == nil {
				mu.Lock()
				accepted[text] = true
				mu.Unlock()
			}
		}
	}()
	waitAccepted := func(n int, what string) {
		t.Helper()
		Eventually(t, 60*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(accepted) >= n }, "%d sends accepted %s", n, what)
	}
	waitAccepted(3, "by the old broker")

	// Install the new release over the old one.
	upgInstall(t, binDir, inst, "intercom", "intercom-broker")
	if exe := upgExe(oldBroker); !strings.HasSuffix(exe, "(deleted)") {
		t.Fatalf("old broker runs %q after the install, want its replaced program", exe)
	}
	mu.Lock()
	before := len(accepted)
	mu.Unlock()
	waitAccepted(before+3, "from the new CLI by the old broker")
	for _, args := range [][]string{{"list"}, {"status"}, {"topics"}, {"--session", "a", "publish", "up/grade", "new CLI, old broker"}} {
		upgWorksOrSaysWhy(t, "new CLI, old broker: "+strings.Join(args, " "), upgRun(t, h, cli, args...))
	}

	// The old broker exits (idles out, or is stopped); the next client
	// starts the new one from the installed path.
	_ = syscall.Kill(oldBroker, syscall.SIGTERM)
	Eventually(t, 30*time.Second, func() bool { return !alive(oldBroker) }, "the old broker %d to exit", oldBroker)
	mu.Lock()
	before = len(accepted)
	mu.Unlock()
	waitAccepted(before+3, "by the new broker")
	newBroker := h.BrokerPid()
	if exe := upgExe(newBroker); newBroker == oldBroker || exe != filepath.Join(inst, "intercom-broker") {
		t.Fatalf("broker after the upgrade: pid %d running %q, want a new one running the installed new binary", newBroker, exe)
	}
	upgWorksOrSaysWhy(t, "new CLI, new broker: topics", upgRun(t, h, cli, "topics"))
	// The old holder a still sends through the new broker: its session is
	// the sender's, and the old CLI from the previous release too.
	oldCLI := filepath.Join(old, "intercom")
	upgWorksOrSaysWhy(t, "old CLI, new broker: list", upgRun(t, h, oldCLI, "list"))
	if r := upgRun(t, h, oldCLI, "--session", "a", "send", "b", "old-cli-after"); r.Code == 0 {
		mu.Lock()
		accepted["old-cli-after"] = true
		mu.Unlock()
	} else {
		upgWorksOrSaysWhy(t, "old CLI, new broker: send", r)
	}
	close(stop)
	AwaitGroup(t, &wg, 90*time.Second, "the sender to stop")

	// Every accepted message reaches the old holder b exactly once.
	mu.Lock()
	want := len(accepted)
	mu.Unlock()
	got := map[string]int{}
	deadline := time.Now().Add(60 * time.Second)
	for covered := 0; covered < want; {
		l, ok := holderB.Line(time.Until(deadline))
		if !ok {
			var missing []string
			for m := range accepted {
				if got[m] == 0 {
					missing = append(missing, m)
				}
			}
			t.Fatalf("old holder b got %d of %d accepted messages; missing %v; stderr: %s", covered, want, missing, holderB.Stderr())
		}
		for m := range accepted {
			if strings.Contains(l, `"text":"`+m+`"`) {
				got[m]++
				if got[m] == 1 {
					covered++
				}
			}
		}
	}
	for m, n := range got {
		if n != 1 {
			t.Errorf("%s delivered %d times", m, n)
		}
	}
	if holderB.Cmd.ProcessState != nil {
		t.Fatalf("old holder b exited: %s", holderB.Stderr())
	}
	t.Logf("%d messages accepted and delivered once across the upgrade", want)
}
