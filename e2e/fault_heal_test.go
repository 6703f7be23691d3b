//go:build linux

package e2e

// Fault tests (issue 19): the ground moves under a running broker. Its home
// is deleted, its database directory made unwritable, its disk answers EIO,
// its socket or socket directory is deleted, it is signalled while its store
// fails. Each ends in a healed broker or a clean exit (status 3 for an
// unavailable store), nothing accepted is lost where the home survives, and
// clients do not start a broker in a deleted home.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/intercom-dev/intercom/internal/paths"
	"github.com/intercom-dev/intercom/internal/testenv"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// exitStoreUnavailable is intercom-broker's exit status when its store
// could not be written (kongrun.StatusStoreUnavailable).
const exitStoreUnavailable = 3

// healBroker starts `intercom-broker --idle-exit=0` for h as the test's own
// child (so that its exit status is seen), through bin (a path, or a name in
// binDir), and waits until its socket answers.
func healBroker(t *testing.T, h *H, bin string) *Proc {
	t.Helper()
	if !filepath.IsAbs(bin) {
		bin = filepath.Join(binDir, bin)
	}
	c := h.cmd(context.Background(), "intercom-broker", "--home", h.Home, "--idle-exit=0")
	c.Path, c.Args[0] = bin, bin
	p := h.startCmd(c)
	Eventually(t, msgWait, func() bool {
		select {
		case <-p.Done():
			t.Fatalf("broker exited at start: %s", p.Stderr())
		default:
		}
		conn, err := net.Dial("unix", h.Layout.Socket)
		if err == nil {
			conn.Close()
		}
		return err == nil
	}, "the broker's socket to answer")
	return p
}

// healExit waits (bounded) for p to end and returns its exit status.
func healExit(t *testing.T, p *Proc, what string) int {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(msgWait):
		t.Fatalf("%s (%v) did not exit; stderr:\n%s", what, p.Cmd.Args, tail(p.Stderr(), 20))
	}
	return p.Cmd.ProcessState.ExitCode()
}

// healSender streams numbered messages to a target until a send fails.
type healSender struct {
	mu       sync.Mutex
	accepted map[string]string // message id → text
	started  map[string]time.Time
	okAt     map[string]time.Time // text → when its send started, for accepted ones
	failed   map[string]bool      // texts whose send returned an error (may be stored)
	err      error
	done     chan struct{}
}

func startHealSender(t *testing.T, c *intercom.Client, to string) *healSender {
	t.Helper()
	ctx := context.Background()
	s, err := c.Attach(ctx, intercom.AttachOptions{Name: "heal-sender", NoDeliver: true})
	if err != nil {
		t.Fatal(err)
	}
	hs := &healSender{accepted: map[string]string{}, okAt: map[string]time.Time{}, failed: map[string]bool{}, done: make(chan struct{})}
	go func() {
		defer close(hs.done)
		for i := 0; ; i++ {
			text := fmt.Sprintf("heal-%05d", i)
			start := time.Now()
			sctx, cancel := context.WithTimeout(ctx, msgWait)
			res, err := c.Send(sctx, wire.SendRequest{From: s.ID(), To: to, Text: text})
			cancel()
			hs.mu.Lock()
			if err != nil {
				hs.failed[text], hs.err = true, err
				hs.mu.Unlock()
				return
			}
			hs.accepted[res.ID], hs.okAt[text] = text, start
			hs.mu.Unlock()
		}
	}()
	return hs
}

func (hs *healSender) count() int {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return len(hs.accepted)
}

// wait waits (bounded) for the sender to stop on an error and returns it.
func (hs *healSender) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-hs.done:
	case <-time.After(2 * msgWait):
		t.Fatal("a send neither succeeded nor failed: it hangs")
	}
	return hs.err
}

// healDetachedRecipient registers a durable session r and detaches it, so
// that messages to it stay stored until it is resumed.
func healDetachedRecipient(t *testing.T, h *H) string {
	t.Helper()
	p, ev := h.Attach("--name", "r")
	id := msgStr(ev["id"])
	msgDetach(t, h, p, id)
	return id
}

// healCollect resumes session id with `attach --resume` and checks that it
// gets every accepted message exactly once and nothing never sent: a
// message whose send failed may have been stored (its answer was lost).
func healCollect(t *testing.T, h *H, id string, hs *healSender) {
	t.Helper()
	p, ev := h.Attach("--resume", id)
	if msgStr(ev["id"]) != id {
		t.Fatalf("resume got session %v, want %s", ev["id"], id)
	}
	h.OK("send", id, "marker")
	seen := map[string]bool{}
	for {
		m := msgNext(t, p)
		mid, text := msgStr(m["id"]), msgStr(m["text"])
		if text == "marker" {
			break
		}
		if seen[mid] {
			t.Fatalf("message %s (%q) delivered twice", mid, text)
		}
		seen[mid] = true
		if hs.accepted[mid] != text && !hs.failed[text] {
			t.Fatalf("delivered message %v was never sent", m)
		}
	}
	for mid, text := range hs.accepted {
		if !seen[mid] {
			t.Errorf("accepted message %s (%q) was lost", mid, text)
		}
	}
	t.Logf("%d accepted before the fault, all delivered after restart", len(hs.accepted))
}

// TestFaultHealHomeDeleted: the home is deleted (rm -rf) under a running
// broker while messages flow. The broker logs one line saying why and exits
// with status 3 within seconds; the sender gets a clear error and no send
// begun after the deletion is accepted; the holders (attach, the hook's
// hold, a bridge) say the home is gone and exit; a hook afterwards says so
// too; nobody re-creates the home or starts a broker there.
func TestFaultHealHomeDeleted(t *testing.T) {
	t.Parallel()
	h := newH(t)
	h.WriteConfig(`{"idleExitMs": 0}`)
	bp := healBroker(t, h, "intercom-broker")
	att, _ := h.Attach("--name", "r")
	hold := h.Start("hold", "--id", "heal-hold-0001", "--name", "held")
	if l, ok := hold.Line(msgWait); !ok || !strings.HasPrefix(l, "ready") {
		t.Fatalf("hold: first line %q; stderr %s", l, hold.Stderr())
	}
	certs := brgCerts(t, h, "alpha", "beta")
	bridge, _ := brgServe(t, h, "127.0.0.1:0", brgMat(certs, "alpha", "beta"))

	hs := startHealSender(t, healConnect(t, h, "sender", filepath.Join(binDir, "intercom-broker")), "r")
	Eventually(t, msgWait, func() bool { return hs.count() >= 20 }, "20 sends accepted")
	if err := os.RemoveAll(h.Home); err != nil {
		t.Fatal(err)
	}
	removed := time.Now()

	if code := healExit(t, bp, "broker"); code != exitStoreUnavailable {
		t.Fatalf("broker exit status %d, want %d; stderr:\n%s", code, exitStoreUnavailable, tail(bp.Stderr(), 20))
	}
	if n := strings.Count(bp.Stderr(), "store unavailable: stopping the broker"); n != 1 || !strings.Contains(bp.Stderr(), "was deleted while in use") {
		t.Fatalf("broker log has %d store-unavailable lines, want 1 naming the deletion:\n%s", n, tail(bp.Stderr(), 20))
	}
	err := hs.wait(t)
	if !errors.Is(err, intercom.ErrStoreUnavailable) && !errors.Is(err, intercom.ErrHomeGone) {
		t.Fatalf("sender stopped with %v, want store_unavailable or home gone", err)
	}
	hs.mu.Lock()
	for text, at := range hs.okAt {
		if at.After(removed) {
			t.Errorf("send of %q begun after the home was deleted was accepted", text)
		}
	}
	hs.mu.Unlock()

	for _, p := range []*Proc{att, hold, bridge} {
		code := healExit(t, p, "holder")
		// attach and the bridge run with --json: their error object is
		// their last stdout line; hold says it on stderr.
		said := p.Stderr()
		for l, ok := p.Line(time.Second); ok; l, ok = p.Line(time.Second) {
			said += l + "\n"
		}
		if code != 1 || !strings.Contains(said, "was deleted while in use; not starting a broker there") {
			t.Errorf("%v: exit %d, want 1 saying the home is gone; it said:\n%s", p.Cmd.Args, code, tail(said, 5))
		}
	}
	r := h.RunIn(h.Cwd, `{"session_id":"heal-hook","hook_event_name":"PostToolUse","tool_name":"Bash","cwd":"/tmp"}`, "hook", "claude", "PostToolUse")
	if r.Code != 0 || !strings.Contains(r.Stderr, "was deleted while in use") {
		t.Errorf("hook after the home was deleted: exit %d, stderr %q; want 0 and the home named gone", r.Code, r.Stderr)
	}
	if _, err := os.Lstat(h.Home); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the deleted home was re-created (%v)", err)
	}
	if pids := h.BrokerPids(); len(pids) > 0 {
		t.Errorf("brokers %v run for the deleted home", pids)
	}
}

// healNoDACBroker writes a broker wrapper that runs intercom-broker without
// the capabilities that let root ignore file modes, so that a chmod 0500
// stops it as it stops any other user. Not root: the plain broker.
func healNoDACBroker(t *testing.T) string {
	t.Helper()
	broker := filepath.Join(binDir, "intercom-broker")
	if os.Geteuid() != 0 {
		return broker
	}
	setpriv, err := exec.LookPath("setpriv")
	testenv.Need(t, err == nil, "running as root without setpriv: cannot make a directory unwritable to the broker")
	w := filepath.Join(t.TempDir(), "broker-nodac")
	script := fmt.Sprintf("#!/bin/sh\nexec %s --bounding-set -dac_override,-dac_read_search -- %s \"$@\"\n", setpriv, broker)
	if err := os.WriteFile(w, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return w
}

// TestFaultHealStoreUnwritableThenWritable: the database directory is made
// unwritable (chmod 0500) while messages flow. The broker exits with status
// 3 within seconds saying it cannot write there; the sender gets an error,
// not a hang; a broker started meanwhile refuses to open the store. Once the
// directory is writable again, a new broker delivers every accepted message
// exactly once.
func TestFaultHealStoreUnwritableThenWritable(t *testing.T) {
	t.Parallel()
	h := newH(t)
	h.WriteConfig(`{"idleExitMs": 0}`)
	broker := healNoDACBroker(t)
	h.Env = append(h.Env, "INTERCOM_BROKER="+broker)
	bp := healBroker(t, h, broker)
	id := healDetachedRecipient(t, h)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("broker %d stderr:\n%s", bp.Cmd.Process.Pid, tail(bp.Stderr(), 30))
		}
	})
	sc := healConnect(t, h, "sender", broker)
	hs := startHealSender(t, sc, id)
	Eventually(t, msgWait, func() bool { return hs.count() >= 20 }, "20 sends accepted")
	db := h.Layout.DBDir()
	if err := os.Chmod(db, 0o500); err != nil {
		t.Fatal(err)
	}
	if code := healExit(t, bp, "broker"); code != exitStoreUnavailable || !strings.Contains(bp.Stderr(), "cannot write in "+db) {
		t.Fatalf("broker exit status %d, want %d naming %s; stderr:\n%s", code, exitStoreUnavailable, db, tail(bp.Stderr(), 20))
	}
	err := hs.wait(t)
	if err == nil {
		t.Fatal("sender stopped without an error")
	}
	t.Logf("sender stopped with: %v", err)
	// No more reconnects (each would start a broker): one started meanwhile
	// finds the store unwritable and exits; only then is it writable again.
	sc.Close()
	Eventually(t, msgWait, func() bool { return len(h.BrokerPids()) == 0 }, "no broker while the store was unwritable")
	if err := os.Chmod(db, 0o700); err != nil {
		t.Fatal(err)
	}
	healCollect(t, h, id, hs)
}

// healLoopHome mounts a fresh 64 MiB ext4 image (a loop device) and returns
// h with its home on it, and the mount point. It skips without root or the
// tools. Cleanup unmounts and detaches it.
func healLoopHome(t *testing.T) (*H, string) {
	t.Helper()
	testenv.Root(t, "the EIO test mounts a loop device")
	for _, tool := range []string{"losetup", "mkfs.ext4"} {
		testenv.Command(t, tool, "the EIO test makes an ext4 image on a loop device")
	}
	root, err := os.MkdirTemp("", "ic-e2e-eio-")
	if err != nil {
		t.Fatal(err)
	}
	img, mnt := filepath.Join(root, "disk.img"), filepath.Join(root, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("truncate", "-s", "64M", img).CombinedOutput(); err != nil {
		t.Fatalf("truncate: %v %s", err, out)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v %s", err, out)
	}
	out, err := exec.Command("losetup", "-f", "--show", img).CombinedOutput()
	if err != nil {
		os.RemoveAll(root)
		testenv.Need(t, false, "cannot attach a loop device: %v %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	if err := syscall.Mount(dev, mnt, "ext4", 0, ""); err != nil {
		_ = exec.Command("losetup", "-d", dev).Run()
		os.RemoveAll(root)
		testenv.Need(t, false, "cannot mount %s: %v", dev, err)
	}
	h := newHIn(t, root, filepath.Join(mnt, "home"), func() {
		healUnmount(t, mnt)
		_ = exec.Command("losetup", "-d", dev).Run()
	})
	h.WriteConfig(`{"idleExitMs": 0}`)
	return h, mnt
}

// healUnmount unmounts mnt, waiting a moment for a killed broker's mappings.
func healUnmount(t *testing.T, mnt string) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if err = syscall.Unmount(mnt, 0); err != syscall.EBUSY || time.Now().After(deadline) {
			break
		}
	}
	if err != nil && err != syscall.EINVAL {
		t.Errorf("unmount %s: %v (detaching it)", mnt, err)
		_ = syscall.Unmount(mnt, syscall.MNT_DETACH)
	}
}

// TestFaultHealEIO: the store's disk starts answering EIO (an ext4 on a
// loop device is shut down with EXT4_IOC_SHUTDOWN, as xfstests' godown does)
// while messages flow. The broker exits with status 3 within seconds, the
// sender gets an error, not a hang. After the filesystem is mounted again
// (its journal replayed), a new broker delivers every accepted message
// exactly once.
func TestFaultHealEIO(t *testing.T) {
	t.Parallel()
	h, mnt := healLoopHome(t)
	broker := filepath.Join(binDir, "intercom-broker")
	bp := healBroker(t, h, broker)
	id := healDetachedRecipient(t, h)
	c := healConnect(t, h, "sender", broker)
	hs := startHealSender(t, c, id)
	Eventually(t, msgWait, func() bool { return hs.count() >= 20 }, "20 sends accepted")

	f, err := os.Open(mnt)
	if err != nil {
		t.Fatal(err)
	}
	// The test's own files (config.json) on disk first; the broker's
	// accepted messages are there already.
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		t.Fatal(err)
	}
	// EXT4_GOING_FLAGS_LOGFLUSH: the journal's committed transactions reach
	// the disk, then every later write, fsync and create fails with EIO: a
	// disk that kept what it acknowledged and then broke. With
	// NOLOGFLUSH (2), one clean-clone CI run (2026-12-01) lost the last
	// message whose msync had returned success, racing the shutdown; 75
	// further runs here (race-built, -cover, under load) did not show it.
	// The broker answered only after that msync succeeded, so what the
	// journal then dropped is ext4's shutdown, not the broker's promise.
	const ext4IocShutdown, logFlush = 0x8004587D, 1 // _IOR('X', 125, __u32)
	err = unix.IoctlSetPointerInt(int(f.Fd()), ext4IocShutdown, logFlush)
	f.Close()
	if err != nil {
		testenv.Need(t, false, "cannot shut the ext4 filesystem down: %v", err)
	}
	if code := healExit(t, bp, "broker"); code != exitStoreUnavailable || !strings.Contains(bp.Stderr(), "input/output error") {
		t.Fatalf("broker exit status %d, want %d with an I/O error; stderr:\n%s", code, exitStoreUnavailable, tail(bp.Stderr(), 20))
	}
	if err := hs.wait(t); err == nil {
		t.Fatal("sender stopped without an error")
	} else {
		t.Logf("sender stopped with: %v", err)
	}
	c.Close() // no more reconnects into the dead filesystem
	healUnmount(t, mnt)
	// Mounted again through a new loop device: the old one may still carry
	// the shut-down filesystem, mounted in another mount namespace that
	// copied it while it was up (`ip netns exec`, as the partition test runs
	// its bridges, copies every mount), and mounting that device again
	// would hand back the same dead superblock, every read an EIO.
	img := filepath.Join(filepath.Dir(mnt), "disk.img")
	out, err := exec.Command("losetup", "-f", "--show", img).CombinedOutput()
	if err != nil {
		t.Fatalf("attach %s to a new loop device: %v %s", img, err, out)
	}
	loop := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command("losetup", "-d", loop).Run() }) // detached once unmounted
	if err := syscall.Mount(loop, mnt, "ext4", 0, ""); err != nil {
		t.Fatalf("mount %s again: %v", loop, err)
	}
	healCollect(t, h, id, hs)
}

// TestFaultHealSocketDeleted: the socket file, then its whole directory,
// is deleted under a running broker. Each time the broker re-creates it at
// the same path with the same modes within about a second; the attached
// session keeps its connection and gets messages sent through the new
// socket; it is the same broker throughout.
func TestFaultHealSocketDeleted(t *testing.T) {
	t.Parallel()
	h := newH(t)
	h.WriteConfig(`{"idleExitMs": 0}`)
	bp := healBroker(t, h, "intercom-broker")
	att, ev := h.Attach("--name", "r", "--json")
	id := msgStr(ev["id"])
	sock, dir := h.Layout.Socket, h.Layout.SocketDir()
	for i, remove := range []func() error{func() error { return os.Remove(sock) }, func() error { return os.RemoveAll(dir) }} {
		if err := remove(); err != nil {
			t.Fatal(err)
		}
		Eventually(t, msgWait, func() bool { return paths.CheckOwnedSocket(sock) == nil }, "the socket to be re-created")
		for path, want := range map[string]os.FileMode{sock: 0o600, dir: 0o700} {
			fi, err := os.Lstat(path)
			if err != nil || fi.Mode().Perm() != want {
				t.Fatalf("after re-creation %s: %v, mode %v, want %v", path, err, fi.Mode().Perm(), want)
			}
		}
		text := fmt.Sprintf("through the new socket %d", i)
		h.OK("send", id, text)
		if m := att.Event(msgWait); m["event"] != "message" || m["text"] != text {
			t.Fatalf("attached session got %v, want message %q without reconnecting", m, text)
		}
	}
	if n := strings.Count(bp.Stderr(), "socket re-created"); n != 2 {
		t.Errorf("broker logged %d socket re-creations, want 2:\n%s", n, tail(bp.Stderr(), 20))
	}
	select {
	case <-bp.Done():
		t.Fatalf("broker exited: %s", tail(bp.Stderr(), 20))
	default:
	}
	if pids := h.BrokerPids(); len(pids) != 1 || pids[0] != bp.Cmd.Process.Pid {
		t.Fatalf("brokers %v, want only the original %d", pids, bp.Cmd.Process.Pid)
	}
}

// TestFaultHealSIGTERMWhileStoreFails: SIGTERM arrives right after the home
// was deleted, while messages flow (Badger then retries its last flush
// forever and a plain close would never return). The broker still exits,
// with status 3, and the sender gets an error, not a hang.
func TestFaultHealSIGTERMWhileStoreFails(t *testing.T) {
	t.Parallel()
	h := newH(t)
	h.WriteConfig(`{"idleExitMs": 0}`)
	bp := healBroker(t, h, "intercom-broker")
	id := healDetachedRecipient(t, h)
	hs := startHealSender(t, healConnect(t, h, "sender", filepath.Join(binDir, "intercom-broker")), id)
	Eventually(t, msgWait, func() bool { return hs.count() >= 20 }, "20 sends accepted")
	if err := os.RemoveAll(h.Home); err != nil {
		t.Fatal(err)
	}
	if err := bp.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := healExit(t, bp, "broker after SIGTERM"); code != exitStoreUnavailable {
		t.Fatalf("broker exit status %d, want %d; stderr:\n%s", code, exitStoreUnavailable, tail(bp.Stderr(), 20))
	}
	if err := hs.wait(t); err == nil {
		t.Fatal("sender stopped without an error")
	}
}

// TestFaultHealStopSignals: SIGTERM, SIGHUP and SIGQUIT each stop a healthy
// broker with a session attached, with status 0, its socket and pid file
// removed; SIGQUIT first writes every goroutine's stack to its stderr.
func TestFaultHealStopSignals(t *testing.T) {
	t.Parallel()
	h := newH(t)
	h.WriteConfig(`{"idleExitMs": 0}`)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT} {
		bp := healBroker(t, h, "intercom-broker")
		att, _ := h.Attach("--name", "r")
		if err := bp.Cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		if code := healExit(t, bp, "broker after "+sig.String()); code != 0 {
			t.Fatalf("%v: broker exit status %d, want 0; stderr:\n%s", sig, code, tail(bp.Stderr(), 20))
		}
		if sig == syscall.SIGQUIT && !strings.Contains(bp.Stderr(), "goroutine ") {
			t.Errorf("SIGQUIT: no goroutine dump on stderr:\n%s", tail(bp.Stderr(), 20))
		}
		for _, f := range []string{h.Layout.Socket, h.Layout.PidFile()} {
			if _, err := os.Lstat(f); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%v: %s left behind (%v)", sig, f, err)
			}
		}
		att.Kill()
		h.KillBroker() // the one attach may have restarted
	}
}

// TestFaultHealLogRotated: a spawned broker writes broker.log through the
// size cap: a log already at the cap (10 MiB) is rotated into one backup at
// the broker's first line, an older backup is removed, and the new log
// holds the broker's own lines.
func TestFaultHealLogRotated(t *testing.T) {
	t.Parallel()
	h := newH(t)
	log := h.Layout.BrokerLog()
	if err := os.MkdirAll(h.Home, 0o700); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(h.Home, "broker-2020-01-01T00-00-00.000.log")
	if err := os.WriteFile(old, []byte("oldest backup\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	junk := []byte(strings.Repeat("x", 1023) + "\n")
	f, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 << 10 {
		if _, err := f.Write(junk); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	h.OK("list")
	backups := func() []string {
		m, _ := filepath.Glob(filepath.Join(h.Home, "broker-*.log"))
		return m
	}
	Eventually(t, msgWait, func() bool { b := backups(); return len(b) == 1 && b[0] != old }, "one new backup, the oldest removed (have %v)", backups())
	fi, err := os.Stat(backups()[0])
	if err != nil || fi.Size() != 10<<20 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("backup %s: %v, size %d mode %v; want the 10 MiB old log, 0600", backups()[0], err, fi.Size(), fi.Mode().Perm())
	}
	Eventually(t, msgWait, func() bool {
		data, _ := os.ReadFile(log)
		return strings.Contains(string(data), "broker ready") && len(data) < 1<<20
	}, "broker.log to start anew with the broker's lines")
}
