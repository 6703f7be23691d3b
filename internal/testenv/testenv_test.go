package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// childVar makes TestNeed, in a child copy of this test binary, meet one
// requirement: a skip or a failure ends the test that meets it, so the
// verdicts are read from the child's output.
const childVar = "TESTENV_CHILD"

func TestNeed(t *testing.T) {
	if c := os.Getenv(childVar); c != "" {
		Need(t, c == "present", "needs %s", "a unicorn")
		return
	}
	t.Parallel()
	for _, c := range []struct {
		name, child string
		ci          bool
		wantFail    bool
		want        string
	}{
		{"missing on a developer machine skips", "missing", false, false, "--- SKIP: TestNeed"},
		{"missing in CI fails", "missing", true, true, "--- FAIL: TestNeed"},
		{"present in CI passes", "present", true, false, "--- PASS: TestNeed"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestNeed$", "-test.v")
		cmd.Env = append(os.Environ(), childVar+"="+c.child, CIVar+"=")
		if c.ci {
			cmd.Env = append(cmd.Env, CIVar+"=1")
		}
		out, err := cmd.CombinedOutput()
		if (err != nil) != c.wantFail || !strings.Contains(string(out), c.want) {
			t.Errorf("%s: err %v, output:\n%s", c.name, err, out)
		}
		if c.child == "missing" && !strings.Contains(string(out), "testenv: needs a unicorn") {
			t.Errorf("%s: the reason is not in the output:\n%s", c.name, out)
		}
	}
}

func TestUIDMapped(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		uidMap string
		uid    int
		want   bool
	}{
		{"         0          0 4294967295\n", 65534, true},
		{"         0       1000          1\n", 65534, false},
		{"         0       1000          1\n         1     100000      65536\n", 65534, true},
		{"         0       1000          1\n         1     100000      65533\n", 65534, false},
		{"", 0, false},
	} {
		if got := uidMapped(c.uidMap, c.uid); got != c.want {
			t.Errorf("uidMapped(%q, %d) = %v, want %v", c.uidMap, c.uid, got, c.want)
		}
	}
}
