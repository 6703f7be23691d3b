package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intercom-dev/intercom/internal/install"
)

// Doctor knows intercom-hook: hooks that run it are installed (and fail
// once it is gone); hooks an older release wrote, `intercom hook`, are
// installed too, with a note to install again when intercom-hook sits
// beside that intercom.
func TestDoctorKnowsTheHookExecutable(t *testing.T) {
	t.Parallel()
	m := newMachine(t, "claude")
	m.install("claude", m.intercom) // an older install: `intercom hook`
	hook := filepath.Join(filepath.Dir(m.intercom), "intercom-hook")
	m.script(hook, "exit 0")
	if c := row(t, m.run("claude"), "claude", "user", "installed"); c.Status != OK || !strings.Contains(c.Detail, "install again") {
		t.Fatalf("`intercom hook` hooks beside an intercom-hook: %s %q, want OK with a note to install again", c.Status, c.Detail)
	}
	plans, err := install.Plans(install.Target{Harness: "claude", Home: m.home, Command: m.intercom, HookCommand: hook}, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range plans {
		if _, err := install.Apply(p); err != nil {
			t.Fatal(err)
		}
	}
	c := row(t, m.run("claude"), "claude", "user", "installed")
	if c.Status != OK || !strings.Contains(c.Detail, hook) || strings.Contains(c.Detail, "install again") {
		t.Fatalf("intercom-hook hooks: %s %q, want OK naming %s", c.Status, c.Detail, hook)
	}
	if err := os.Remove(hook); err != nil {
		t.Fatal(err)
	}
	if c := row(t, m.run("claude"), "claude", "user", "installed"); c.Status != Fail || !strings.Contains(c.Detail, "intercom-hook") {
		t.Fatalf("hooks running a missing intercom-hook: %s %q, want a failure naming it", c.Status, c.Detail)
	}
}
