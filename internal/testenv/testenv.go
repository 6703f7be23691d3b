// Package testenv decides what a test does when the machine lacks what it
// needs (root, a tmpfs, tmux): on a developer's machine the test skips,
// saying what is missing; in CI, where INTERCOM_CI is set, it fails, so a
// security or durability test can never pass by not running.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// CIVar is the environment variable CI sets (to any non-empty value) to make
// every missing requirement a failure.
const CIVar = "INTERCOM_CI"

// InCI reports whether the tests run under CI's rules.
func InCI() bool { return os.Getenv(CIVar) != "" }

// Need skips t, or fails it under CI, unless ok. The message says what the
// test needs and why; it is prefixed so that CI logs can be searched.
func Need(t testing.TB, ok bool, format string, args ...any) {
	t.Helper()
	if ok {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if InCI() {
		t.Fatalf("testenv: %s (%s is set: CI must provide this, not skip)", msg, CIVar)
	}
	t.Skipf("testenv: %s", msg)
}

// Root needs the effective uid 0 (or root in a user namespace).
func Root(t testing.TB, why string) {
	t.Helper()
	Need(t, os.Geteuid() == 0, "needs root: %s", why)
}

// Command needs name on PATH.
func Command(t testing.TB, name, why string) {
	t.Helper()
	_, err := exec.LookPath(name)
	Need(t, err == nil, "needs %s on PATH: %s", name, why)
}

// UID needs root and uid mapped in this user namespace, so that a child
// process can run as uid (in a user namespace only the mapped ids exist).
func UID(t testing.TB, uid int, why string) {
	t.Helper()
	Root(t, why)
	data, err := os.ReadFile("/proc/self/uid_map")
	Need(t, err == nil && uidMapped(string(data), uid), "needs uid %d mapped in this user namespace (/proc/self/uid_map): %s", uid, why)
}

// uidMapped reads a uid_map ("inside outside count" per line).
func uidMapped(uidMap string, uid int) bool {
	for _, line := range strings.Split(uidMap, "\n") {
		var inside, outside, count int
		if n, _ := fmt.Sscan(line, &inside, &outside, &count); n == 3 && uid >= inside && uid < inside+count {
			return true
		}
	}
	return false
}
