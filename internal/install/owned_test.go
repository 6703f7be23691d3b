package install

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// InspectOwned reads back what install pi and install opencode write: all
// there and naming the binary after install, a removed file or an
// unregistered package missing, nothing after uninstall.
func TestInspectOwned(t *testing.T) {
	for _, harness := range []string{"pi", "opencode"} {
		t.Run(harness, func(t *testing.T) {
			home := t.TempDir()
			tg := Target{Harness: harness, Home: home, Command: "/opt/ic/intercom"}
			if harness == "pi" {
				tg.AgentDir = PiAgentDir("", home)
			}
			if own := InspectOwned(tg); own.Any() {
				t.Fatalf("before install: %+v", own)
			}
			applyAll(t, tg, true)
			own := InspectOwned(tg)
			if !own.Any() || len(own.Missing()) != 0 || own.Command != tg.Command || own.SettingsErr != nil || own.Foreign != nil {
				t.Fatalf("after install: %+v (missing %q)", own, own.Missing())
			}
			if err := os.Remove(own.Files[0]); err != nil {
				t.Fatal(err)
			}
			if m := InspectOwned(tg).Missing(); len(m) != 1 || m[0] != own.Files[0] {
				t.Errorf("with %s removed, missing %q", own.Files[0], m)
			}
			applyAll(t, tg, true)
			if harness == "pi" {
				settings := filepath.Join(tg.AgentDir, "settings.json")
				if err := os.WriteFile(settings, []byte(`{"packages": []}`), 0o600); err != nil {
					t.Fatal(err)
				}
				if m := InspectOwned(tg).Missing(); len(m) != 1 || !strings.Contains(m[0], "packages") {
					t.Errorf("unregistered package: missing %q", m)
				}
				if err := os.WriteFile(settings, []byte(`{"packages": [`), 0o600); err != nil {
					t.Fatal(err)
				}
				if InspectOwned(tg).SettingsErr == nil {
					t.Errorf("a malformed settings.json gave no SettingsErr")
				}
				return
			}
			applyAll(t, tg, false)
			if own := InspectOwned(tg); own.Any() {
				t.Errorf("after uninstall: %+v", own)
			}
		})
	}
}
