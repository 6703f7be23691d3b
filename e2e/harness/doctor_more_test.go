//go:build harness

package harness

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intercom-dev/intercom/internal/schema"
)

// intercom doctor against the real Gemini CLI, Pi and OpenCode: their
// versions, each installed by the real `intercom install` (Gemini CLI's
// hooks and its MCP server answering), and each broken once its settings
// are corrupted (exit 1).
func TestDoctorGeminiPiOpenCode(t *testing.T) {
	line := currentPi(t)
	w := NewWorld(t)
	w.InstallGemini()
	w.InstallPi()
	w.InstallOpenCode(NewChatCompletions(t))
	dir := w.Project("doctor")
	// Pi 1.x's own node (its .bin has both) first: pi needs Node >= 22.19.
	path := "PATH=" + strings.Join([]string{filepath.Dir(piNodeBin[line.Name]), filepath.Dir(geminiBin), filepath.Dir(openCodeBin(t)), binDir, os.Getenv("PATH")}, string(os.PathListSeparator))
	run := func() (schema.Doctor, int) {
		t.Helper()
		r := w.Intercom(dir, []string{path}, "--json", "doctor", "--timeout", "90s", "gemini", "pi", "opencode")
		var d schema.Doctor
		if err := json.Unmarshal([]byte(r.Stdout), &d); err != nil {
			t.Fatalf("doctor --json (exit %d): %v\n%s\nstderr: %s", r.Code, err, r.Stdout, r.Stderr)
		}
		return d, r.Code
	}

	d, code := run()
	for h, v := range map[string]string{"gemini": geminiPin.Version, "pi": line.Version, "opencode": openCodeVersion} {
		if c := doctorCheck(t, d, h, "", "version"); c.Status != "ok" || !strings.Contains(c.Detail, v) {
			t.Errorf("%s version: %+v, want %s", h, c, v)
		}
		for _, check := range []string{"config", "installed"} {
			if c := doctorCheck(t, d, h, "user", check); c.Status != "ok" {
				t.Errorf("%s %s after install: %+v", h, check, c)
			}
		}
	}
	for _, check := range []string{"hooks", "mcp"} {
		if c := doctorCheck(t, d, "gemini", "user", check); c.Status != "ok" {
			t.Errorf("gemini %s after install: %+v", check, c)
		}
	}
	if code != 0 || !d.OK {
		t.Errorf("doctor after install: exit %d ok %v: %+v", code, d.OK, d.Checks)
	}

	corrupt := map[string]string{
		"gemini":   filepath.Join(w.Home, ".gemini", "settings.json"),
		"pi":       filepath.Join(w.PiAgentDir(), "settings.json"),
		"opencode": filepath.Join(w.openCodeConfigDir(), "opencode.json"),
	}
	for _, p := range corrupt {
		if err := os.WriteFile(p, []byte(`{"hooks": {`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	d, code = run()
	for h, p := range corrupt {
		if c := doctorCheck(t, d, h, "user", "config"); c.Status != "fail" || !strings.Contains(c.Detail, p) || c.Fix == "" {
			t.Errorf("%s config with a malformed %s: %+v", h, p, c)
		}
	}
	if code != 1 || d.OK {
		t.Errorf("doctor with broken settings: exit %d ok %v, want 1 false", code, d.OK)
	}
}
