package e2e

// intercom doctor against settings written by the real `intercom install`,
// healthy and then broken as users break them.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intercom-dev/intercom/internal/schema"
)

// doctorH is an H whose user home is a temp dir and whose PATH has no
// harness executables (so the rows depend only on the settings).
func doctorH(t *testing.T) (*H, string) {
	t.Helper()
	h := newH(t)
	home := filepath.Join(h.Cwd, "userhome")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	h.Env = append(h.Env, "HOME="+home, "PATH=/usr/bin:/bin", "XDG_CONFIG_HOME=", "PI_CODING_AGENT_DIR=", "GEMINI_CLI_HOME=", "OPENCODE_CONFIG=", "OPENCODE_CONFIG_DIR=")
	return h, home
}

// doctor runs intercom --json doctor ARGS, validates the output against
// its schema and returns it with the exit status.
func doctorJSON(t *testing.T, h *H, args ...string) (schema.Doctor, int) {
	t.Helper()
	r := h.Run(append([]string{"--json", "doctor", "--timeout", "20s"}, args...)...)
	checkJSON(t, "intercom-doctor", r.Stdout)
	var d schema.Doctor
	if err := json.Unmarshal([]byte(r.Stdout), &d); err != nil {
		t.Fatalf("doctor --json: %v\n%s\nstderr: %s", err, r.Stdout, r.Stderr)
	}
	return d, r.Code
}

func doctorRow(t *testing.T, d schema.Doctor, harness, scope, check string) schema.DoctorCheck {
	t.Helper()
	c, ok := d.Find(harness, scope, check)
	if !ok {
		t.Fatalf("no %s %s %s row: %+v", harness, scope, check, d.Checks)
	}
	return c
}

func TestDoctorHealthyInstall(t *testing.T) {
	t.Parallel()
	h, _ := doctorH(t)
	h.WriteConfig(`{"idleExitMs": 0}`) // the broker the MCP check starts stays for the second run
	h.OK("install", "claude")
	h.OK("install", "codex")
	d, code := doctorJSON(t, h)
	if code != 0 || !d.OK {
		t.Fatalf("doctor exit %d ok %v: %+v", code, d.OK, d.Checks)
	}
	for _, harness := range []string{"claude", "codex"} {
		for _, check := range []string{"config", "installed", "mcp"} {
			if c := doctorRow(t, d, harness, "user", check); c.Status != "ok" {
				t.Errorf("%s %s: %s %q", harness, check, c.Status, c.Detail)
			}
		}
		if c := doctorRow(t, d, harness, "", "version"); c.Status != "warn" || !strings.Contains(c.Detail, "not on PATH") {
			t.Errorf("%s version without the harness on PATH: %s %q", harness, c.Status, c.Detail)
		}
	}
	if c := doctorRow(t, d, "claude", "user", "hooks"); c.Status != "ok" {
		t.Errorf("claude hooks: %s %q", c.Status, c.Detail)
	}
	if c := doctorRow(t, d, "codex", "user", "mcp"); !strings.Contains(c.Detail, "tools: intercom") {
		t.Errorf("codex mcp: %q", c.Detail)
	}
	for _, harness := range []string{"gemini", "pi", "opencode"} {
		if c := doctorRow(t, d, harness, "", "found"); c.Status != "none" {
			t.Errorf("%s: %s %q, want not found", harness, c.Status, c.Detail)
		}
	}
	// The MCP handshake started the broker; a second doctor finds it.
	d, _ = doctorJSON(t, h)
	if c := doctorRow(t, d, "broker", "", "broker"); c.Status != "ok" || !strings.Contains(c.Detail, "version") {
		t.Errorf("broker: %s %q", c.Status, c.Detail)
	}
}

func TestDoctorBrokenInstall(t *testing.T) {
	t.Parallel()
	h, home := doctorH(t)
	// Claude: installed by an intercom binary that is gone since.
	moved := filepath.Join(h.Cwd, "moved")
	if err := os.MkdirAll(moved, 0o755); err != nil {
		t.Fatal(err)
	}
	// A link, or a copy made by cp: a binary this process wrote could be
	// "text file busy" when run (a parallel test's fork inherits the fd).
	if err := os.Link(filepath.Join(binDir, "intercom"), filepath.Join(moved, "intercom")); err != nil {
		if out, err := exec.Command("cp", filepath.Join(binDir, "intercom"), moved).CombinedOutput(); err != nil {
			t.Fatalf("cp intercom: %v %s", err, out)
		}
	}
	c := h.cmd(t.Context(), "intercom", "install", "claude")
	c.Path = filepath.Join(moved, "intercom")
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("install claude from %s: %v\n%s", moved, err, out)
	}
	if err := os.Remove(filepath.Join(moved, "intercom")); err != nil {
		t.Fatal(err)
	}
	// Codex: hooks feature turned off after install.
	h.OK("install", "codex")
	cfg := filepath.Join(home, ".codex", "config.toml")
	toml, err := os.ReadFile(cfg)
	if err != nil || !strings.Contains(string(toml), "hooks = true") {
		t.Fatalf("codex config: %v\n%s", err, toml)
	}
	if err := os.WriteFile(cfg, []byte(strings.Replace(string(toml), "hooks = true", "hooks = false", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	d, code := doctorJSON(t, h, "claude", "codex")
	if code != 1 || d.OK {
		t.Fatalf("doctor exit %d ok %v, want 1 and false: %+v", code, d.OK, d.Checks)
	}
	if c := doctorRow(t, d, "claude", "user", "installed"); c.Status != "fail" || !strings.Contains(c.Detail, "does not exist") || !strings.Contains(c.Fix, "intercom install claude") {
		t.Errorf("claude installed: %+v", c)
	}
	if c := doctorRow(t, d, "claude", "user", "mcp"); c.Status != "fail" {
		t.Errorf("claude mcp: %+v", c)
	}
	if c := doctorRow(t, d, "codex", "user", "hooks"); c.Status != "fail" || !strings.Contains(c.Detail, "hooks feature off") {
		t.Errorf("codex hooks: %+v", c)
	}
	// Malformed settings: the config row fails; the human output says so
	// in aligned rows with the fix under the row, and one line on stderr.
	if err := os.WriteFile(filepath.Join(home, ".claude", "settings.json"), []byte(`{"hooks": {`), 0o644); err != nil {
		t.Fatal(err)
	}
	d, _ = doctorJSON(t, h, "claude")
	if c := doctorRow(t, d, "claude", "user", "config"); c.Status != "fail" || !strings.Contains(c.Detail, "settings.json") {
		t.Errorf("claude config: %+v", c)
	}
	r := h.Run("doctor", "claude")
	if r.Code != 1 || !strings.Contains(r.Stderr, "something installed is broken") {
		t.Fatalf("doctor claude: exit %d, stderr %q", r.Code, r.Stderr)
	}
	var failRow, fixLine bool
	for _, l := range strings.Split(r.Stdout, "\n") {
		f := strings.Fields(l)
		failRow = failRow || len(f) >= 4 && f[0] == "claude" && f[1] == "(user)" && f[2] == "config" && f[3] == "fail"
		fixLine = fixLine || len(f) > 0 && f[0] == "fix:"
	}
	if !failRow || !fixLine {
		t.Errorf("human output has no claude config fail row with a fix line:\n%s", r.Stdout)
	}
	// intercom's own config.json, which every other command refuses, is a
	// failed check of doctor's.
	h.WriteConfig(`{"idleExitMs": -1}`)
	d, code = doctorJSON(t, h, "codex")
	if c := doctorRow(t, d, "intercom", "", "config"); code != 1 || c.Status != "fail" || !strings.Contains(c.Detail, "idleExitMs") {
		t.Errorf("doctor with an invalid config.json: exit %d, %+v", code, c)
	}
}
