//go:build linux

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/internal/testenv"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// newDiskFullH is newMsgH with its home on a private 48 MiB tmpfs, so the
// test can fill the broker's disk without touching the machine's. The
// filler file lives at the returned path, on the same tmpfs, outside the
// home. Without root or a working mount it skips on a developer's machine
// and fails in CI (testenv).
func newDiskFullH(t *testing.T) (*H, string) {
	t.Helper()
	testenv.Root(t, "the disk-full test mounts a tmpfs")
	root, err := os.MkdirTemp("", "ic-e2e-diskfull-")
	if err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(root, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	err = syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=48m,mode=0755")
	if err != nil {
		os.RemoveAll(root)
	}
	testenv.Need(t, err == nil, "the disk-full test mounts a tmpfs at %s: %v", mnt, err)
	h := newHIn(t, root, filepath.Join(mnt, "home"), func() {
		// A killed broker's pid turns zombie before all its threads have
		// exited and dropped their mappings: EBUSY may last a moment.
		var uerr error
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if uerr = syscall.Unmount(mnt, 0); uerr != syscall.EBUSY || time.Now().After(deadline) {
				break
			}
		}
		if uerr != nil {
			t.Errorf("unmount %s: %v (detaching it); holders: %v", mnt, uerr, diskFullHolders(mnt))
			_ = syscall.Unmount(mnt, syscall.MNT_DETACH)
		}
	})
	h.WriteConfig(`{"idleExitMs": 0}`)
	h.Env = append(h.Env, "GORACE=atexit_sleep_ms=0")
	t.Cleanup(func() {
		// Runs before the unmount above (cleanups are LIFO).
		if data, err := os.ReadFile(h.Layout.BrokerLog()); err == nil && strings.Contains(string(data), "DATA RACE") {
			t.Errorf("the broker reported a data race:\n%s", data)
		}
	})
	return h, filepath.Join(mnt, "filler")
}

// fillDisk writes path until the filesystem refuses with ENOSPC, first in
// 1 MiB chunks, then in 4 KiB chunks so that no whole page is left free.
// It fails the test if the disk never fills.
func fillDisk(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, chunk := range []int{1 << 20, 4 << 10} {
		buf := make([]byte, chunk)
		for i := 0; ; i++ {
			if i > (64<<20)/chunk { // more than the whole tmpfs: never full
				t.Fatalf("filler %s: wrote more than 64 MiB without ENOSPC", path)
			}
			if _, err := f.Write(buf); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("filler %s: %v, want ENOSPC", path, err)
				}
				break
			}
		}
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(filepath.Dir(path), &st); err != nil {
		t.Fatal(err)
	}
	if free := st.Bavail * uint64(st.Bsize); free >= 4<<10 {
		t.Fatalf("after filling, %d bytes are still free", free)
	}
}

// TestFaultDiskFull: when the store's disk fills, sends are refused quickly
// with exit 1 and a "no space" error (no hang, no crash), reads keep
// working, and once space returns sends succeed again. A detached recipient
// that resumes gets every accepted message (before the disk filled and after
// it recovered) exactly once and none of the refused ones.
func TestFaultDiskFull(t *testing.T) {
	h, filler := newDiskFullH(t)

	p, ev := h.Attach("--name", "r")
	id := msgStr(ev["id"])
	msgDetach(t, h, p, id)
	pid := h.BrokerPid()
	if pid == 0 || !alive(pid) {
		t.Fatalf("no live broker after attach (pid %d)", pid)
	}

	accepted := map[string]string{} // message id → text
	send := func(text string, offline bool) {
		t.Helper()
		var res map[string]any
		h.JSON(&res, "send", "r", text)
		mid := msgStr(res["id"])
		if mid == "" || (res["offline"] == true) != offline {
			t.Fatalf("send %q: result %v, want an id and offline %v", text, res, offline)
		}
		if _, dup := accepted[mid]; dup {
			t.Fatalf("send %q: id %s reused", text, mid)
		}
		accepted[mid] = text
	}
	for i := 0; i < 3; i++ {
		send(fmt.Sprintf("before-%d", i), true)
	}

	fillDisk(t, filler)

	refused := map[string]bool{}
	for i := 0; i < 3; i++ {
		text := fmt.Sprintf("refused-%d", i)
		r := h.Run("send", "r", text)
		if r.Code != 1 {
			t.Fatalf("send %q on a full disk: exit %d, want 1\nstdout: %s\nstderr: %s", text, r.Code, r.Stdout, r.Stderr)
		}
		if !strings.Contains(strings.ToLower(r.Stderr), "no space") {
			t.Fatalf("send %q on a full disk: stderr %q does not say \"no space\"", text, r.Stderr)
		}
		refused[text] = true
	}
	if !alive(pid) {
		t.Fatalf("broker %d died on a full disk", pid)
	}

	// Reads still work while the disk is full.
	if row := Row(h.Sessions("--all"), "r"); row == nil || row["id"] != id || row["state"] != "disconnected" {
		t.Fatalf("list --all --json on a full disk: row of r is %v", row)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		send(fmt.Sprintf("after-%d", i), true)
	}
	if got := h.BrokerPid(); got != pid || !alive(pid) {
		t.Fatalf("broker changed or died across the disk-full episode: pid %d, was %d", got, pid)
	}

	p2, ev2 := h.Attach("--resume", id, "--json")
	if msgStr(ev2["id"]) != id {
		t.Fatalf("resume got session %v, want %s", ev2["id"], id)
	}
	send("marker", false)
	seen := map[string]bool{}
	for {
		m := msgNext(t, p2)
		mid, text := msgStr(m["id"]), msgStr(m["text"])
		if refused[text] {
			t.Fatalf("refused message %q was delivered: %v", text, m)
		}
		want, ok := accepted[mid]
		if !ok {
			t.Fatalf("delivered message %v was never accepted", m)
		}
		if text != want {
			t.Fatalf("message %s has text %q, want %q", mid, text, want)
		}
		if seen[mid] {
			t.Fatalf("message %s (%q) delivered twice", mid, text)
		}
		seen[mid] = true
		if text == "marker" {
			break
		}
		if len(seen) > len(accepted) {
			t.Fatalf("more messages than accepted: %v", seen)
		}
	}
	for mid, text := range accepted {
		if !seen[mid] {
			t.Fatalf("accepted message %s (%q) was not delivered before the marker", mid, text)
		}
	}
}

// diskFullHolders lists processes with a file, mapping or cwd under dir.
func diskFullHolders(dir string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		hit := ""
		if maps, err := os.ReadFile(p + "/maps"); err == nil && strings.Contains(string(maps), dir) {
			hit = "maps"
		}
		if cwd, err := os.Readlink(p + "/cwd"); err == nil && strings.HasPrefix(cwd, dir) {
			hit += " cwd"
		}
		fds, _ := filepath.Glob(p + "/fd/*")
		for _, fd := range fds {
			if l, err := os.Readlink(fd); err == nil && strings.HasPrefix(l, dir) {
				hit += " fd:" + l
			}
		}
		if hit != "" {
			cmd, _ := os.ReadFile(p + "/cmdline")
			out = append(out, fmt.Sprintf("%s %q:%s", p, strings.ReplaceAll(string(cmd), "\x00", " "), hit))
		}
	}
	return out
}

// TestFaultDiskNearlyFullBigSends: with a little more than the reserve free,
// a burst of concurrent near-limit messages (many per group commit) is
// either accepted or refused with "no space" per message; the broker does
// not die (Badger's mmapped logs SIGBUS when a batch outruns the disk; the
// free-space check covers a whole batch, and a batch is bounded in bytes),
// and every accepted one is delivered once space returns.
func TestFaultDiskNearlyFullBigSends(t *testing.T) {
	h, filler := newDiskFullH(t)
	c := msgClient(t, h)
	ctx, cancel := context.WithTimeout(context.Background(), 3*msgWait)
	defer cancel()
	rcv, err := c.Attach(ctx, intercom.AttachOptions{Name: "rcv", Cwd: h.Cwd})
	if err != nil {
		t.Fatal(err)
	}
	rid := rcv.ID()
	if err := rcv.Detach(ctx); err != nil {
		t.Fatal(err)
	}
	snd, err := c.Attach(ctx, intercom.AttachOptions{Name: "snd", Cwd: h.Cwd, NoDeliver: true})
	if err != nil {
		t.Fatal(err)
	}
	pid := h.BrokerPid()
	// Leave 14 MiB: the 8 MiB reserve and room for a few big messages, far
	// less than the burst below.
	fillDisk(t, filler)
	if err := os.Truncate(filler, diskFullSize(t, filler)-14<<20); err != nil {
		t.Fatal(err)
	}
	body := strings.Repeat("x", 900<<10)
	const burst = 24
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted := map[string]bool{}
	refused := 0
	for i := range burst {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := c.Send(ctx, wire.SendRequest{From: snd.ID(), To: rid, Text: fmt.Sprintf("%02d %s", i, body)})
			mu.Lock()
			defer mu.Unlock()
			var we *wire.Error
			switch {
			case err == nil:
				accepted[res.ID] = true
			case errors.As(err, &we) && we.Code == wire.CodeNoSpace:
				refused++
			default:
				t.Errorf("send %d: %v, want success or a no-space refusal", i, err)
			}
		}()
	}
	AwaitGroup(t, &wg, 2*time.Minute, "the %d sends of the burst to return", burst)
	if got := h.BrokerPid(); got != pid || !alive(pid) {
		t.Fatalf("the broker died in the burst (pid %d, was %d)", got, pid)
	}
	if refused == 0 {
		t.Fatalf("all %d sends of 900 KiB accepted with 14 MiB free: the disk was not nearly full", burst)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	stored, err := c.Inbox(ctx, rid, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, m := range stored {
		if !accepted[m.ID] || got[m.ID] {
			t.Fatalf("stored message %s: accepted %v, seen before %v", m.ID, accepted[m.ID], got[m.ID])
		}
		got[m.ID] = true
	}
	if len(got) != len(accepted) {
		t.Fatalf("%d messages stored, %d accepted", len(got), len(accepted))
	}
	t.Logf("burst of %d × 900 KiB with 14 MiB free: %d accepted, %d refused (no space), broker alive", burst, len(accepted), refused)
}

// diskFullSize is the size of the filler file.
func diskFullSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
