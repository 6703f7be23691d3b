package e2e

// Foundation: auto-spawn, the private runtime layout, idle exit, restart and
// recovery, session identity and targets, project scope, configuration and
// usage errors. Helpers here are prefixed fnd to stay out of other files' way.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/internal/paths"
	"github.com/intercom-dev/intercom/internal/pidfile"
)

// fndRunBin runs one of the built binaries to completion (30 s limit).
func fndRunBin(h *H, bin string, args ...string) Result {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := h.cmd(ctx, bin, args...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			h.t.Fatalf("run %s %v: %v", bin, args, err)
		}
		code = ee.ExitCode()
	}
	return Result{out.String(), errb.String(), code}
}

func fndMode(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatalf("stat %s: %v", p, err)
	}
	return fi.Mode()
}

func fndExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// fndOneBroker waits until exactly one broker serves h and returns its pid,
// checking it is the one recorded in broker.pid.
func fndOneBroker(t *testing.T, h *H) int {
	t.Helper()
	pids := h.BrokerPids()
	if len(pids) != 1 {
		t.Fatalf("broker processes %v, want exactly one", pids)
	}
	if rec := h.BrokerPid(); rec != pids[0] {
		t.Fatalf("broker.pid records %d, running broker is %d", rec, pids[0])
	}
	return pids[0]
}

func fndBrokerLog(h *H) string {
	data, _ := os.ReadFile(h.Layout.BrokerLog())
	return string(data)
}

// fndSleeper starts `sleep 60` and kills it at cleanup.
func fndSleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	c := exec.Command("sleep", "60")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	return c
}

// fndNoIdleExit keeps h's broker up without clients, for tests that check
// the same broker across several calls.
func fndNoIdleExit(h *H) { h.WriteConfig(`{"idleExitMs": 0}`) }

// F1: the first call on a fresh home starts exactly one broker.
func TestFoundationAutoSpawnFirstCall(t *testing.T) {
	t.Parallel()
	h := newH(t)
	if fndExists(h.Home) || len(h.BrokerPids()) != 0 {
		t.Fatalf("fresh home is not fresh")
	}
	out := h.OK("list")
	firstDone := time.Now()
	if !strings.Contains(out, "Sessions:") {
		t.Fatalf("list output %q", out)
	}
	pid := fndOneBroker(t, h)
	if m := fndMode(t, h.Home); m.Perm() != 0o700 || !m.IsDir() {
		t.Fatalf("INTERCOM_HOME created with mode %v, want 0700 dir", m)
	}
	rec, err := pidfile.Read(h.Layout.PidFile())
	if err != nil {
		t.Fatalf("broker.pid: %v", err)
	}
	if rec.Identity == nil {
		t.Fatalf("broker.pid has no linux-v1 identity line")
	}
	if v := pidfile.Judge(rec); v != pidfile.Live {
		t.Fatalf("broker.pid of running broker %d judged %v", pid, v)
	}
	// A second call reuses it. The one legitimate exception is the default
	// 5 s idle exit ending the first broker in between (a slow machine):
	// then its log says so, and it is gone before the second one starts.
	h.OK("list")
	if again := fndOneBroker(t, h); again != pid {
		log := fndBrokerLog(h)
		if alive(pid) || strings.Count(log, `msg="shutting down" reason=idle`) < 1 || strings.Count(log, "broker ready") != 2 {
			t.Fatalf("second call changed broker %d -> %d without an idle exit of the first:\n%s", pid, again, log)
		}
		t.Logf("the first broker idled out between the calls (%s after the first); the second call started %d", time.Since(firstDone), again)
	}
}

// F1: ten concurrent first calls yield one broker, and all succeed.
func TestFoundationConcurrentFirstCallsOneBroker(t *testing.T) {
	t.Parallel()
	h := newH(t)
	const n = 10
	results := make([]Result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			c := h.cmd(ctx, "intercom", "list", "--json")
			var out, errb bytes.Buffer
			c.Stdout, c.Stderr = &out, &errb
			<-start
			err := c.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				errs[i] = err
			}
			results[i] = Result{out.String(), errb.String(), code}
		}(i)
	}
	close(start)
	AwaitGroup(t, &wg, 90*time.Second, "the %d concurrent first calls to return", n)
	for i, r := range results {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		if r.Code != 0 || !strings.Contains(r.Stdout, `"sessions"`) {
			t.Errorf("call %d: exit %d\nstdout: %s\nstderr: %s", i, r.Code, r.Stdout, r.Stderr)
		}
	}
	fndOneBroker(t, h)
	if n := strings.Count(fndBrokerLog(h), "broker ready"); n != 1 {
		t.Fatalf("broker.log shows %d broker starts, want 1:\n%s", n, fndBrokerLog(h))
	}
}

// socketInodes returns the inodes of the sockets open in pid.
func fndSocketInodes(t *testing.T, pid string) map[string]bool {
	t.Helper()
	dir := "/proc/" + pid + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read %s: %v", dir, err)
	}
	out := map[string]bool{}
	for _, e := range ents {
		link, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // fd closed meanwhile
		}
		if strings.HasPrefix(link, "socket:[") {
			out[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	return out
}

// fndNetInodes reads the inode column of /proc/<pid>/net/<table>.
func fndNetInodes(t *testing.T, pid, table string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile("/proc/" + pid + "/net/" + table)
	if err != nil {
		if os.IsNotExist(err) {
			return nil // e.g. no IPv6 in this kernel
		}
		t.Fatalf("read net/%s: %v", table, err)
	}
	out := map[string]bool{}
	for i, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if i == 0 || len(f) < 10 {
			continue
		}
		out[f[9]] = true
	}
	return out
}

// fndUnixListener finds the inode of the unix socket bound to path.
func fndUnixInodes(t *testing.T, pid, path string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile("/proc/" + pid + "/net/unix")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) >= 8 && f[7] == path {
			out[f[6]] = true
		}
	}
	return out
}

// The broker opens no TCP or UDP socket, and every file it makes is private.
func TestFoundationBrokerNoNetworkAndPrivateModes(t *testing.T) {
	t.Parallel()
	// Positive control: the table parser sees a TCP listener of our own.
	if ln, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		self := fmt.Sprint(os.Getpid())
		mine := fndSocketInodes(t, self)
		tcp := fndNetInodes(t, self, "tcp")
		found := false
		for ino := range mine {
			found = found || tcp[ino]
		}
		ln.Close()
		if !found {
			t.Fatalf("control: our own TCP listener is not in /proc/self/net/tcp; the check below would prove nothing")
		}
	}

	h := newH(t)
	h.Attach("--name", "alpha") // one live spliced connection too
	pid := fmt.Sprint(fndOneBroker(t, h))
	socks := fndSocketInodes(t, pid)
	listener := fndUnixInodes(t, pid, h.Layout.Socket)
	owns := false
	for ino := range listener {
		owns = owns || socks[ino]
	}
	if !owns {
		t.Fatalf("broker %s does not hold the listener of %s (sockets %v, bound %v)", pid, h.Layout.Socket, socks, listener)
	}
	for _, table := range []string{"tcp", "tcp6", "udp", "udp6"} {
		inet := fndNetInodes(t, pid, table)
		for ino := range socks {
			if inet[ino] {
				t.Errorf("broker %s has a %s socket (inode %s)", pid, table, ino)
			}
		}
	}

	for _, c := range []struct {
		path string
		want os.FileMode
		kind os.FileMode
	}{
		{h.Home, 0o700, os.ModeDir},
		{h.Layout.SocketDir(), 0o700, os.ModeDir},
		{h.Layout.Socket, 0o600, os.ModeSocket},
		{h.Layout.PidFile(), 0o600, 0},
		{h.Layout.DBDir(), 0o700, os.ModeDir},
	} {
		m := fndMode(t, c.path)
		if m.Perm() != c.want || m.Type() != c.kind {
			t.Errorf("%s: mode %v, want %v%v", c.path, m, c.kind, c.want)
		}
	}
	if filepath.Dir(h.Layout.Socket) == h.Home {
		t.Errorf("socket lives in INTERCOM_HOME, want a private short dir")
	}
}

// F1: the broker exits idleExitMs after its last session leaves, not before.
func TestFoundationIdleExit(t *testing.T) {
	t.Parallel()
	h := newH(t)
	h.WriteConfig(`{"idleExitMs": 500}`)
	a, _ := h.Attach("--name", "alpha")
	b, _ := h.Attach("--name", "beta")
	pid := fndOneBroker(t, h)

	a.Signal(syscall.SIGTERM)
	// Absence check: with beta attached the broker must outlive the idle
	// period several times over.
	time.Sleep(2 * time.Second)
	if !alive(pid) {
		t.Fatalf("broker %d exited while beta was still attached\n%s", pid, fndBrokerLog(h))
	}
	if r := Row(h.Sessions(), "beta"); r == nil || r["connected"] != true {
		t.Fatalf("beta row %v", r)
	}
	if got := fndOneBroker(t, h); got != pid {
		t.Fatalf("broker changed %d -> %d", pid, got)
	}

	b.Signal(syscall.SIGTERM)
	Eventually(t, 15*time.Second, func() bool { return !alive(pid) }, "broker %d to idle-exit", pid)
	Eventually(t, 5*time.Second, func() bool {
		return !fndExists(h.Layout.Socket) && !fndExists(h.Layout.PidFile())
	}, "socket and broker.pid to be removed")
	if !strings.Contains(fndBrokerLog(h), "idle") {
		t.Errorf("broker.log does not say it stopped for idleness:\n%s", fndBrokerLog(h))
	}
}

// A broker killed with -9 is replaced by the attached holder itself, and the
// session keeps its id.
func TestFoundationRestartKeepsSessionIdentity(t *testing.T) {
	t.Parallel()
	h := newH(t)
	a, ev := h.Attach("--name", "alpha")
	id := ev["id"].(string)
	old := fndOneBroker(t, h)
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 10*time.Second, func() bool { return !alive(old) }, "broker %d to die", old)
	// Nothing but the attach process is running: it must start the new broker.
	Eventually(t, 30*time.Second, func() bool {
		p := h.BrokerPids()
		return len(p) == 1 && p[0] != old
	}, "the attach process to start a new broker")
	Eventually(t, 20*time.Second, func() bool {
		r := Row(h.Sessions(), "alpha")
		return r != nil && r["connected"] == true && r["id"] == id
	}, "alpha to be connected again with id %s", id)
	rows := h.Sessions()
	n := 0
	for _, r := range rows {
		if r["name"] == "alpha" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d alpha rows after restart, want 1: %v", n, rows)
	}
	// The re-registered holder receives again.
	h.OK("send", "alpha", "after restart")
	m := a.Event(10 * time.Second)
	if m["event"] == "reconnected" { // attach reports the reconnection first
		if m["id"] != id {
			t.Fatalf("reconnected as %v, want %s", m["id"], id)
		}
		m = a.Event(10 * time.Second)
	}
	if m["event"] != "message" || m["text"] != "after restart" {
		t.Fatalf("got %v, want the message sent after restart", m)
	}
}

// SIGTERM stops the broker cleanly: socket and pid file removed.
func TestFoundationSigtermCleanShutdown(t *testing.T) {
	t.Parallel()
	h := newH(t)
	fndNoIdleExit(h)
	h.OK("list")
	pid := fndOneBroker(t, h)
	if !fndExists(h.Layout.Socket) {
		t.Fatal("no socket while broker runs")
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 10*time.Second, func() bool { return !alive(pid) }, "broker %d to stop on SIGTERM", pid)
	if fndExists(h.Layout.Socket) {
		t.Errorf("socket %s left behind", h.Layout.Socket)
	}
	if fndExists(h.Layout.PidFile()) {
		t.Errorf("broker.pid left behind")
	}
	// And the next call starts a fresh one.
	h.OK("list")
	if fndOneBroker(t, h) == pid {
		t.Fatal("same pid after restart")
	}
}

// fndPrepareHome creates home and the socket dir as the broker would.
func fndPrepareHome(t *testing.T, h *H) {
	t.Helper()
	if err := paths.EnsurePrivateDir(h.Home); err != nil {
		t.Fatal(err)
	}
	if err := paths.EnsurePrivateDir(h.Layout.SocketDir()); err != nil {
		t.Fatal(err)
	}
}

// fndStaleSocket leaves a socket file nobody listens on.
func fndStaleSocket(t *testing.T, path string) {
	t.Helper()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	if fndMode(t, path).Type() != os.ModeSocket {
		t.Fatal("stale socket not left behind")
	}
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		t.Fatal("stale socket still answers")
	}
}

func fndWrite(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Leftovers of a crashed broker do not block the next one.
func TestFoundationStaleRecordsRecovered(t *testing.T) {
	t.Parallel()
	t.Run("dead pid, garbage lock, stale socket", func(t *testing.T) {
		t.Parallel()
		h := newH(t)
		fndPrepareHome(t, h)
		fndNoIdleExit(h)
		dead := exec.Command("true")
		if err := dead.Run(); err != nil {
			t.Fatal(err)
		}
		deadPid := dead.Process.Pid
		fndWrite(t, h.Layout.PidFile(), fmt.Sprintf("%d\nlinux-v1 00000000-0000-0000-0000-000000000000 4026531836 12345\n", deadPid))
		fndWrite(t, h.Layout.SpawnLock(), "garbage\x00\xff not a lock\n")
		fndStaleSocket(t, h.Layout.Socket)

		h.OK("list")
		pid := fndOneBroker(t, h)
		if pid == deadPid {
			t.Fatal("broker.pid still names the dead pid")
		}
		h.OK("list") // and it keeps answering
	})
	t.Run("live pid of another process", func(t *testing.T) {
		t.Parallel()
		h := newH(t)
		fndPrepareHome(t, h)
		sl := fndSleeper(t)
		// A live pid whose recorded identity is provably another process
		// (other boot): stale, ignored, and nothing is killed.
		fndNoIdleExit(h)
		fndWrite(t, h.Layout.PidFile(), fmt.Sprintf("%d\nlinux-v1 ffffffff-0000-0000-0000-000000000000 4026531836 1\n", sl.Process.Pid))
		fndStaleSocket(t, h.Layout.Socket)
		h.OK("list")
		fndOneBroker(t, h)
		if !alive(sl.Process.Pid) {
			t.Fatal("recovery killed the process named in the stale pid file")
		}
	})
}

// A live broker pid with a dead socket blocks auto-spawn with a clear error.
func TestFoundationLiveBrokerPidWithoutSocketBlocks(t *testing.T) {
	t.Parallel()
	t.Run("proven identity", func(t *testing.T) {
		t.Parallel()
		h := newH(t)
		fndPrepareHome(t, h)
		sl := fndSleeper(t)
		id, err := pidfile.Self(sl.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		record := pidfile.Format(sl.Process.Pid, id)
		fndWrite(t, h.Layout.PidFile(), record)
		r := h.Run("list")
		if r.Code != 1 {
			t.Fatalf("list exit %d, want 1\nstdout: %s\nstderr: %s", r.Code, r.Stdout, r.Stderr)
		}
		if !strings.Contains(r.Stderr, "alive") || !strings.Contains(r.Stderr, "unhealthy") || !strings.Contains(r.Stderr, fmt.Sprint(sl.Process.Pid)) {
			t.Fatalf("stderr %q, want it to name pid %d as alive with an unhealthy socket", r.Stderr, sl.Process.Pid)
		}
		if p := h.BrokerPids(); len(p) != 0 {
			t.Fatalf("a broker was started anyway: %v", p)
		}
		if !alive(sl.Process.Pid) {
			t.Fatal("the recorded process was killed")
		}
		if data, _ := os.ReadFile(h.Layout.PidFile()); string(data) != record {
			t.Fatalf("broker.pid changed to %q", data)
		}
	})
	t.Run("unprovable numeric record", func(t *testing.T) {
		t.Parallel()
		h := newH(t)
		fndPrepareHome(t, h)
		sl := fndSleeper(t)
		fndWrite(t, h.Layout.PidFile(), fmt.Sprintf("%d\n", sl.Process.Pid))
		r := h.Run("list")
		if r.Code != 1 || !strings.Contains(r.Stderr, "unhealthy") || !strings.Contains(r.Stderr, fmt.Sprint(sl.Process.Pid)) {
			t.Fatalf("list exit %d stderr %q, want 1 and an unhealthy-socket error", r.Code, r.Stderr)
		}
		if p := h.BrokerPids(); len(p) != 0 {
			t.Fatalf("a broker was started anyway: %v", p)
		}
	})
}

// A symlinked socket directory is refused by client and broker alike.
func TestFoundationSymlinkedSocketDirRefused(t *testing.T) {
	t.Parallel()
	h := newH(t)
	other := t.TempDir()
	if err := os.Chmod(other, 0o700); err != nil {
		t.Fatal(err)
	}
	dir := paths.SocketDirFor(h.Home)
	if dir != h.Layout.SocketDir() {
		t.Fatalf("layout socket dir %s, SocketDirFor %s", h.Layout.SocketDir(), dir)
	}
	if err := os.Symlink(other, dir); err != nil {
		t.Fatal(err)
	}
	r := h.Run("list")
	if r.Code == 0 || !strings.Contains(strings.ToLower(r.Stderr), "unsafe") {
		t.Fatalf("list exit %d stderr %q, want failure mentioning unsafe", r.Code, r.Stderr)
	}
	if strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
		t.Errorf("error is not one line: %q", r.Stderr)
	}
	if p := h.BrokerPids(); len(p) != 0 {
		t.Fatalf("broker started behind a symlinked socket dir: %v", p)
	}

	br := fndRunBin(h, "intercom-broker", "--home", h.Home)
	if br.Code == 0 {
		t.Fatalf("broker accepted a symlinked socket dir\nstderr: %s", br.Stderr)
	}
	low := strings.ToLower(br.Stderr)
	if !strings.Contains(low, "unsafe") || !strings.Contains(low, "symlink") {
		t.Fatalf("broker error %q, want it to say unsafe and symlink", br.Stderr)
	}
	ents, _ := os.ReadDir(other)
	if len(ents) != 0 {
		t.Fatalf("something was created through the symlink: %v", ents)
	}
	if fi := fndMode(t, dir); fi&os.ModeSymlink == 0 {
		t.Fatal("the symlink was replaced")
	}
}

// F2: shared names get id-prefix targets; ambiguity, short prefixes,
// unknown targets and self targets are clear errors.
func TestFoundationNameCollisionsAndTargets(t *testing.T) {
	t.Parallel()
	h := newH(t)
	p1, ev1 := h.Attach("--name", "dup")
	p2, ev2 := h.Attach("--name", "dup")
	h.Attach("--name", "solo")
	id1, id2 := ev1["id"].(string), ev2["id"].(string)
	if id1 == id2 {
		t.Fatal("two sessions got one id")
	}
	rows := h.Sessions()
	tg := map[string]string{}
	for _, r := range rows {
		if r["name"] == "dup" {
			tg[r["id"].(string)] = r["target"].(string)
		}
	}
	if len(tg) != 2 {
		t.Fatalf("want both dup rows, got %v", rows)
	}
	for id, target := range tg {
		if target == "dup" || len(target) < 8 || !strings.HasPrefix(id, target) {
			t.Fatalf("dup %s shown with target %q, want an id prefix of >= 8 chars", id, target)
		}
	}
	if r := Row(rows, "solo"); r == nil || r["target"] != "solo" {
		t.Fatalf("unique name solo has target %v, want solo", r)
	}
	human := h.OK("list")
	for _, target := range tg {
		if !strings.Contains(human, "dup ("+target+")") {
			t.Errorf("human list does not show target %s:\n%s", target, human)
		}
	}

	r := h.Run("send", "dup", "hi")
	if r.Code != 1 || !strings.Contains(r.Stderr, "ambiguous") {
		t.Fatalf("send dup: exit %d stderr %q, want exit 1 and ambiguous", r.Code, r.Stderr)
	}
	for _, target := range tg {
		if !strings.Contains(r.Stderr, target) {
			t.Errorf("ambiguity error does not list candidate %s: %q", target, r.Stderr)
		}
	}

	h.OK("send", tg[id2], "to the second")
	if m := p2.Event(10 * time.Second); m["event"] != "message" || m["text"] != "to the second" {
		t.Fatalf("second dup got %v", m)
	}
	// "to the first" was sent after "to the second" was delivered: had
	// that leaked to the first, it would be the first's next event.
	h.OK("send", tg[id1], "to the first")
	if m := p1.Event(10 * time.Second); m["event"] != "message" || m["text"] != "to the first" {
		t.Fatalf("first dup got %v", m)
	}
	p1.NoneBuffered()

	r = h.Run("send", id1[:4], "hi")
	if r.Code == 0 || !strings.Contains(r.Stderr, "too short") && !strings.Contains(r.Stderr, "shorter than") {
		t.Fatalf("send to 4-char prefix: exit %d stderr %q, want a too-short error", r.Code, r.Stderr)
	}
	r = h.Run("send", "nobody-here", "hi")
	if r.Code != 1 || !strings.Contains(r.Stderr, "nobody-here") {
		t.Fatalf("send to unknown: exit %d stderr %q, want exit 1 naming the target", r.Code, r.Stderr)
	}
	r = h.Run("--session", "solo", "send", "solo", "hi")
	if r.Code != 1 || !strings.Contains(r.Stderr, "Cannot message the current session") {
		t.Fatalf("self send: exit %d stderr %q", r.Code, r.Stderr)
	}
}

func fndGit(t *testing.T, dir string, args ...string) {
	t.Helper()
	c := exec.Command("git", args...)
	c.Dir = dir
	c.Env = append(os.Environ(),
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func fndNames(rows []map[string]any) map[string]bool {
	out := map[string]bool{}
	for _, r := range rows {
		out[r["name"].(string)] = true
	}
	return out
}

// F2: list defaults to the git project, which spans worktrees.
func TestFoundationProjectScopeAcrossWorktrees(t *testing.T) {
	t.Parallel()
	h := newH(t)
	repo := filepath.Join(h.Cwd, "repo")
	wt := filepath.Join(h.Cwd, "wt")
	elsewhere := filepath.Join(h.Cwd, "elsewhere")
	for _, d := range []string{repo, elsewhere} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fndGit(t, repo, "init", "-q")
	fndWrite(t, filepath.Join(repo, "README"), "x")
	fndGit(t, repo, "add", "README")
	fndGit(t, repo, "commit", "-q", "-m", "init")
	fndGit(t, repo, "worktree", "add", "-q", "../wt")

	h.Attach("--name", "inrepo", "--cwd", repo)
	h.Attach("--name", "inwt", "--cwd", wt)
	h.Attach("--name", "outside", "--cwd", elsewhere)

	list := func(dir string, args ...string) map[string]bool {
		t.Helper()
		r := h.RunIn(dir, "", append([]string{"--json", "list"}, args...)...)
		if r.Code != 0 {
			t.Fatalf("list in %s: exit %d %s", dir, r.Code, r.Stderr)
		}
		var out struct {
			Sessions []map[string]any `json:"sessions"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
			t.Fatalf("decode %q: %v", r.Stdout, err)
		}
		return fndNames(out.Sessions)
	}
	for _, dir := range []string{repo, wt} {
		got := list(dir)
		if !got["inrepo"] || !got["inwt"] || got["outside"] || len(got) != 2 {
			t.Errorf("list from %s shows %v, want inrepo and inwt only", dir, got)
		}
	}
	if got := list(elsewhere); !got["outside"] || len(got) != 1 {
		t.Errorf("list from the unrelated dir shows %v, want outside only", got)
	}
	if got := list(repo, "--scope", "all"); !got["inrepo"] || !got["inwt"] || !got["outside"] {
		t.Errorf("--scope all shows %v, want all three", got)
	}
	rows := h.Sessions("--scope", "all")
	if a, b := Row(rows, "inrepo"), Row(rows, "inwt"); a == nil || b == nil || a["project"] != b["project"] || a["cwd"] == b["cwd"] {
		t.Errorf("worktree rows %v / %v, want one project, two cwds", a, b)
	}
}

// F12: config validation is strict about values and lenient about keys.
func TestFoundationConfigValidation(t *testing.T) {
	t.Parallel()
	t.Run("bad value", func(t *testing.T) {
		t.Parallel()
		h := newH(t)
		h.WriteConfig(`{"askTimeoutMs": "x"}`)
		for _, args := range [][]string{{"list"}, {"send", "x", "hi"}, {"attach", "--name", "a"}} {
			r := h.Run(args...)
			if r.Code != 2 || !strings.Contains(r.Stderr, "askTimeoutMs") {
				t.Errorf("%v: exit %d stderr %q, want 2 naming askTimeoutMs", args, r.Code, r.Stderr)
			}
		}
		if p := h.BrokerPids(); len(p) != 0 {
			t.Errorf("a broker was started despite the bad config: %v", p)
		}
		br := fndRunBin(h, "intercom-broker", "--home", h.Home)
		if br.Code != 2 || !strings.Contains(br.Stderr, "askTimeoutMs") {
			t.Errorf("broker with bad config: exit %d stderr %q", br.Code, br.Stderr)
		}
	})
	t.Run("unknown key", func(t *testing.T) {
		t.Parallel()
		h := newH(t)
		h.WriteConfig(`{"frobnicate": true, "idleExitMs": 60000}`)
		r := h.Run("list")
		if r.Code != 0 {
			t.Fatalf("unknown key failed the command: exit %d %q", r.Code, r.Stderr)
		}
		if !strings.Contains(r.Stderr, "frobnicate") || !strings.Contains(strings.ToLower(r.Stderr), "warning") {
			t.Fatalf("stderr %q, want a warning naming frobnicate", r.Stderr)
		}
	})
	t.Run("invalid json", func(t *testing.T) {
		t.Parallel()
		h := newH(t)
		h.WriteConfig(`{"idleExitMs": 500,`)
		r := h.Run("list")
		if r.Code != 2 || !strings.Contains(r.Stderr, "config") {
			t.Fatalf("exit %d stderr %q, want 2 about config", r.Code, r.Stderr)
		}
	})
}

// Usage errors exit 2 with one line; help exits 0.
func TestFoundationUsageErrors(t *testing.T) {
	t.Parallel()
	h := newH(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"list", "--scope", "nope"}, "scope"},
		{[]string{"attach", "--name", "bad\tname"}, "invalid session name"},
		{[]string{"nosuchcommand"}, "nosuchcommand"},
		{[]string{"state", "sleeping", "--session", "x"}, "invalid status"},
	}
	for _, c := range cases {
		r := h.Run(c.args...)
		if r.Code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", c.args, r.Code, r.Stderr)
			continue
		}
		if !strings.Contains(r.Stderr, c.want) {
			t.Errorf("%v: stderr %q lacks %q", c.args, r.Stderr, c.want)
		}
		if strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
			t.Errorf("%v: usage error is not one line: %q", c.args, r.Stderr)
		}
		if strings.Contains(r.Stderr, ": :") {
			t.Errorf("%v: garbled error %q", c.args, r.Stderr)
		}
	}
	r := h.Run("--help")
	if r.Code != 0 || !strings.Contains(r.Stdout+r.Stderr, "Examples") {
		t.Fatalf("--help: exit %d, output lacks Examples:\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// intercom state changes the published state of a held session.
func TestFoundationStateCommand(t *testing.T) {
	t.Parallel()
	h := newH(t)
	h.Attach("--name", "worker")
	if r := Row(h.Sessions(), "worker"); r == nil || r["state"] != "idle" || r["accepts_asks"] != true {
		t.Fatalf("fresh worker row %v", r)
	}
	h.OK("--session", "worker", "state", "thinking")
	r := Row(h.Sessions(), "worker")
	if r == nil || r["state"] != "busy" || r["accepts_asks"] != false || r["status"] != "thinking" {
		t.Fatalf("after state thinking: %v", r)
	}
	h.OK("--session", "worker", "state", "tool:bash")
	if r := Row(h.Sessions(), "worker"); r == nil || r["state"] != "busy" || r["status"] != "tool:bash" {
		t.Fatalf("after state tool:bash: %v", r)
	}
	h.OK("--session", "worker", "state", "idle")
	r = Row(h.Sessions(), "worker")
	if r == nil || r["state"] != "idle" || r["accepts_asks"] != true || r["status"] != "idle" {
		t.Fatalf("after state idle: %v", r)
	}
	if res := h.Run("state", "idle"); res.Code != 2 || !strings.Contains(res.Stderr, "--session") {
		t.Fatalf("state without a session: exit %d %q", res.Code, res.Stderr)
	}
}
