//go:build linux

package e2e

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Reads after acknowledged writes. make demo failed 2 runs of 14 with
// "tab-4 not released" right after the release was acknowledged and its
// subscriber woken: the state was released, but the check was
// `intercom topics T | grep -q "tab-4: released"` under `set -o pipefail`.
// grep exits at the matching line; intercom printed line by line, so its
// next write met a closed pipe and SIGPIPE ended it with status 141, which
// failed the pipeline. A one-shot command now writes its output in one
// write when it ends (kongrun.Output), which a pipe takes whole before the
// reader reads anything. These tests read every kind of acknowledged state
// as a script does, through a reader that stops at the line it wants.

// writesOf runs bin with args, its stdout a SOCK_SEQPACKET socket (each
// write(2) arrives as one record), and returns the records and the exit
// status.
func writesOf(t *testing.T, h *H, bin string, args ...string) ([]string, int) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	rd, wr := os.NewFile(uintptr(fds[0]), "records"), os.NewFile(uintptr(fds[1]), "stdout")
	defer rd.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := h.cmd(ctx, bin, args...)
	c.Stdout = wr
	var errb strings.Builder
	c.Stderr = &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	wr.Close()
	var recs []string
	buf := make([]byte, 1<<20)
	for {
		n, err := rd.Read(buf)
		if n > 0 {
			recs = append(recs, string(buf[:n]))
		}
		if err != nil || n == 0 {
			break
		}
	}
	code := 0
	if err := c.Wait(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("%s %v: %v", bin, args, err)
		}
		code = ee.ExitCode()
	}
	if code != 0 {
		t.Fatalf("%s %v: exit %d; stderr: %s", bin, args, code, errb.String())
	}
	return recs, code
}

// readsAtOnce asserts that `bin args` prints want in a single write.
func readsAtOnce(t *testing.T, h *H, want, bin string, args ...string) {
	t.Helper()
	recs, _ := writesOf(t, h, bin, args...)
	if len(recs) != 1 || !strings.Contains(recs[0], want) {
		t.Fatalf("%s %v: %d writes %q, want one write containing %q (a reader that stops early would kill it with SIGPIPE half-way)", bin, args, len(recs), recs, want)
	}
}

// grepQ runs intercom args with stdout a pipe that is closed as soon as a
// line containing want has been read (grep -q), and returns the exit
// status and whether want was seen.
func grepQ(t *testing.T, h *H, want string, args ...string) (int, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := h.cmd(ctx, "intercom", args...)
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	seen := false
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if strings.Contains(sc.Text(), want) {
			seen = true
			break
		}
	}
	out.Close() // grep -q exits here
	err = c.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), seen
	}
	if err != nil && !errors.Is(err, os.ErrClosed) {
		t.Fatalf("intercom %v: %v", args, err)
	}
	return 0, seen
}

// TestDemoReleaseReadThroughGrep is make demo's hand-off: once the
// release is acknowledged, `topics | grep -q` succeeds every time.
func TestDemoReleaseReadThroughGrep(t *testing.T) {
	t.Parallel()
	h := newH(t)
	planner, _ := h.Attach("--name", "planner")
	h.Attach("--name", "worker")
	const topic = "browser/shared-profile/tab-4"
	h.OK("--session", "planner", "subscribe", topic, "--await-release")
	h.OK("--session", "worker", "publish", topic, "--resource", "tab-4", "--ownership", "held", "Reviewing the sign-in flow.")
	readsAtOnce(t, h, "resource tab-4: held by worker", "intercom", "topics", topic)
	h.OK("--session", "worker", "publish", topic, "--event", "release", "--resource", "tab-4", "--ownership", "released", "Sign-in check complete.")
	expectTopicEvent(t, planner, "planner", "release", topic, "Sign-in check complete.")
	for i := range 20 {
		code, seen := grepQ(t, h, "resource tab-4: released", "topics", topic)
		if !seen || code != 0 {
			t.Fatalf("read %d after the release: match %t, intercom exit %d (141: killed by SIGPIPE half-way through its output)", i, seen, code)
		}
	}
	readsAtOnce(t, h, "resource tab-4: released", "intercom", "topics", topic)
}

// TestAcknowledgedWritesReadAtOnce: after each acknowledged write
// (registered, state, sent, answered), the read a script runs next shows
// it, in one write.
func TestAcknowledgedWritesReadAtOnce(t *testing.T) {
	t.Parallel()
	h := newH(t)
	h.Attach("--name", "alpha")
	bob, _ := h.Attach("--name", "bob")
	readsAtOnce(t, h, "bob", "intercom", "list")
	readsAtOnce(t, h, "alpha", "intercom", "status")

	ask := h.Start("--session", "alpha", "ask", "bob", "Ship it?")
	if ev := bob.Event(topicWait); ev["text"] != "Ship it?" {
		t.Fatalf("bob got %v, want the ask", ev)
	}
	readsAtOnce(t, h, "Ship it?", "intercom", "--session", "bob", "pending")
	h.OK("--session", "bob", "reply", "Yes.")
	if code := ask.ExitCode(topicWait); code != 0 {
		t.Fatalf("ask exit %d; stderr: %s", code, ask.Stderr())
	}
	readsAtOnce(t, h, "No pending", "intercom", "--session", "bob", "pending")
	h.OK("--session", "bob", "state", "tool:Bash") // busy: takes no asks now
	readsAtOnce(t, h, "tool:Bash", "intercom", "list", "--all")
}

// TestRunsQuestionReadAtOnce: a saved question and a saved answer show in
// the next `agent-runs questions`, in one write.
func TestRunsQuestionReadAtOnce(t *testing.T) {
	t.Parallel()
	h := rsH(t)
	sup, _ := h.Attach("--name", "sup")
	script := rsScript(t, h.Cwd, "child.sh", `r=$(intercom contact-supervisor --reason need_decision -m "Stable or experimental?"); echo "got: $r"`)
	id := rsStart(t, h, h.Cwd, "sup", "--agent", "worker", "--", "/bin/sh", script)
	rsNextMessage(t, sup)
	q := rsAwaitQuestion(t, h, id)
	readsAtOnce(t, h, "Stable or experimental?", "agent-runs", "questions")
	rsOK(t, h, h.Cwd, "answer", id, "--question-id", q.ID, "Stable.")
	readsAtOnce(t, h, "answer: ", "agent-runs", "questions")
	rsAwaitOutput(t, h, id, "got: ", rsWait)
}

// TestReservationWritesReadAtOnce: after an acknowledged reserve, renewal
// and release, the next `reservations` (and `list`) a script runs shows
// it, in one write, also through a reader that stops early.
func TestReservationWritesReadAtOnce(t *testing.T) {
	t.Parallel()
	h := newH(t)
	h.Attach("--name", "alpha")
	h.OK("--session", "alpha", "reserve", "db/schema.sql", "--reason", "migration 42")
	readsAtOnce(t, h, "migration 42", "intercom", "reservations")
	readsAtOnce(t, h, "alpha holds db/schema.sql", "intercom", "list")
	for i := range 10 {
		if code, seen := grepQ(t, h, "db/schema.sql", "reservations"); !seen || code != 0 {
			t.Fatalf("read %d after the reserve: match %t, exit %d", i, seen, code)
		}
	}
	h.OK("--session", "alpha", "reserve", "db/schema.sql", "--reason", "migration 43") // a renewal keeps the token
	readsAtOnce(t, h, "migration 43", "intercom", "reservations")
	h.OK("--session", "alpha", "release", "db/schema.sql")
	readsAtOnce(t, h, "No reservations.", "intercom", "reservations")
	readsAtOnce(t, h, "release", "intercom", "reservations", "--history", "db/schema.sql")
}
