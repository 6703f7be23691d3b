//go:build harness

package harness

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/internal/schema"
)

// doctorRun runs `intercom --json doctor claude codex` in dir with the
// real Claude Code and Codex on PATH.
func doctorRun(t *testing.T, w *World, dir string) (schema.Doctor, int) {
	t.Helper()
	path := "PATH=" + strings.Join([]string{filepath.Dir(claudeBin), filepath.Dir(codexBin), binDir, os.Getenv("PATH")}, string(os.PathListSeparator))
	r := w.Intercom(dir, []string{path}, "--json", "doctor", "--timeout", "90s", "claude", "codex")
	var d schema.Doctor
	if err := json.Unmarshal([]byte(r.Stdout), &d); err != nil {
		t.Fatalf("doctor --json (exit %d): %v\n%s\nstderr: %s", r.Code, err, r.Stdout, r.Stderr)
	}
	return d, r.Code
}

func doctorCheck(t *testing.T, d schema.Doctor, harness, scope, check string) schema.DoctorCheck {
	t.Helper()
	c, ok := d.Find(harness, scope, check)
	if !ok {
		t.Fatalf("no %s %s %s row: %+v", harness, scope, check, d.Checks)
	}
	return c
}

// intercom doctor against the real binaries: their versions; Codex's own
// answer on hook trust (untrusted right after install, trusted once the
// user trusts them in /hooks); and the broken configurations it finds: a
// malformed Claude Code settings.json, Codex's hooks feature turned off.
func TestDoctorRealHarnesses(t *testing.T) {
	w := NewWorld(t)
	w.InstallClaude()
	w.InstallCodex()
	dir := w.Project("doctor")

	d, code := doctorRun(t, w, dir)
	if c := doctorCheck(t, d, "claude", "", "version"); c.Status != "ok" || !strings.Contains(c.Detail, claudePin.Version) {
		t.Errorf("claude version: %+v, want %s", c, claudePin.Version)
	}
	if c := doctorCheck(t, d, "codex", "", "version"); c.Status != "ok" || !strings.Contains(c.Detail, codexPin.Version) {
		t.Errorf("codex version: %+v, want %s", c, codexPin.Version)
	}
	for _, h := range []string{"claude", "codex"} {
		for _, check := range []string{"config", "installed", "mcp"} {
			if c := doctorCheck(t, d, h, "user", check); c.Status != "ok" {
				t.Errorf("%s %s: %+v", h, check, c)
			}
		}
	}
	if c := doctorCheck(t, d, "claude", "user", "hooks"); c.Status != "ok" {
		t.Errorf("claude hooks: %+v", c)
	}
	untrusted := doctorCheck(t, d, "codex", "user", "hooks")
	if untrusted.Status != "fail" || !strings.Contains(untrusted.Detail, "not trusted") || !strings.Contains(untrusted.Fix, "Trust all") {
		t.Errorf("codex hooks right after install: %+v, want fail: not trusted", untrusted)
	}
	if code != 1 || d.OK {
		t.Errorf("doctor with untrusted Codex hooks: exit %d ok %v, want 1 false", code, d.OK)
	}

	w.TrustCodexHooks(dir, func(cmd string) bool { return strings.Contains(cmd, binDir) && codexHookCommand(cmd) })
	d, code = doctorRun(t, w, dir)
	if c := doctorCheck(t, d, "codex", "user", "hooks"); c.Status != "ok" || !strings.Contains(c.Detail, "trusted") {
		t.Errorf("codex hooks once trusted: %+v", c)
	}
	if code != 0 || !d.OK {
		t.Errorf("doctor with everything installed and trusted: exit %d ok %v: %+v", code, d.OK, d.Checks)
	}

	settings := filepath.Join(w.Home, ".claude", "settings.json")
	if err := os.WriteFile(settings, []byte(`{"hooks": {"Stop": [`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(w.Home, ".codex", "config.toml")
	toml, err := os.ReadFile(cfg)
	if err != nil || !strings.Contains(string(toml), "hooks = true") {
		t.Fatalf("codex config: %v\n%s", err, toml)
	}
	if err := os.WriteFile(cfg, []byte(strings.Replace(string(toml), "hooks = true", "hooks = false", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	d, code = doctorRun(t, w, dir)
	if c := doctorCheck(t, d, "claude", "user", "config"); c.Status != "fail" || !strings.Contains(c.Detail, settings) {
		t.Errorf("claude config with malformed settings.json: %+v", c)
	}
	if c := doctorCheck(t, d, "codex", "user", "hooks"); c.Status != "fail" || !strings.Contains(c.Detail, "hooks feature off") {
		t.Errorf("codex hooks with the feature off: %+v", c)
	}
	if c := doctorCheck(t, d, "claude", "", "version"); c.Status != "ok" {
		t.Errorf("claude version with broken settings: %+v", c)
	}
	if code != 1 || d.OK {
		t.Errorf("doctor with broken settings: exit %d ok %v, want 1 false", code, d.OK)
	}
}

// A project install is read by Codex only in a trusted project: doctor
// says so from Codex's own hook list, then, once the project is trusted,
// that the hooks themselves still need trust.
func TestDoctorCodexProjectTrust(t *testing.T) {
	w := NewWorld(t)
	dir := w.Project("app")
	if r := w.Intercom(dir, nil, "install", "codex", "--project"); r.Code != 0 {
		t.Fatalf("install codex --project: exit %d %s", r.Code, r.Stderr)
	}
	d, code := doctorRun(t, w, dir)
	if c := doctorCheck(t, d, "codex", "project", "hooks"); c.Status != "fail" || !strings.Contains(c.Detail, "trusted project") || !strings.Contains(c.Fix, dir) {
		t.Errorf("codex project hooks in an untrusted project: %+v", c)
	}
	if code != 1 {
		t.Errorf("doctor exit %d, want 1", code)
	}
	cfg := filepath.Join(w.Home, ".codex", "config.toml")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("[projects."+strconv.Quote(dir)+"]\ntrust_level = \"trusted\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d, _ = doctorRun(t, w, dir)
	if c := doctorCheck(t, d, "codex", "project", "hooks"); c.Status != "fail" || !strings.Contains(c.Detail, "5 of 5 intercom hooks not trusted") {
		t.Errorf("codex project hooks in a trusted project: %+v", c)
	}
	if c := doctorCheck(t, d, "codex", "project", "mcp"); c.Status != "ok" {
		t.Errorf("codex project mcp: %+v", c)
	}
}

// Claude Code starts a project's .mcp.json server only once approved;
// doctor's mcp row says so (from `claude mcp list`): pending, then
// connected once the user's settings approve it.
func TestDoctorClaudeProjectApproval(t *testing.T) {
	w := NewWorld(t)
	dir := w.Project("app")
	if r := w.Intercom(dir, nil, "install", "claude", "--project"); r.Code != 0 {
		t.Fatalf("install claude --project: exit %d %s", r.Code, r.Stderr)
	}
	mcpList := func() string {
		t.Helper()
		ctx, cancel := withTimeout(2 * time.Minute)
		defer cancel()
		c := exec.CommandContext(ctx, claudeBin, "mcp", "list")
		c.Env = append(append([]string(nil), w.Env...), "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
		c.Dir = dir
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("claude mcp list: %v\n%s", err, out)
		}
		return string(out)
	}
	d, _ := doctorRun(t, w, dir)
	if c := doctorCheck(t, d, "claude", "project", "mcp"); c.Status != "warn" || !strings.Contains(c.Detail, "not approved") {
		t.Errorf("doctor on a pending project server: %+v", c)
	}
	if out := mcpList(); !strings.Contains(out, "Pending approval") {
		t.Errorf("claude mcp list does not agree it is pending:\n%s", out)
	}
	if err := os.MkdirAll(filepath.Join(w.Home, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.Home, ".claude", "settings.json"), []byte(`{"enabledMcpjsonServers": ["intercom"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	d, _ = doctorRun(t, w, dir)
	if c := doctorCheck(t, d, "claude", "project", "mcp"); c.Status != "ok" {
		t.Errorf("doctor on an approved project server: %+v", c)
	}
	if out := mcpList(); !strings.Contains(out, "Connected") {
		t.Errorf("claude mcp list does not agree it is approved and answers:\n%s", out)
	}
}
