package install

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// applyPi runs install (add) or uninstall for Pi in agentDir and returns
// how many files changed.
func applyPi(t *testing.T, agentDir string, add bool) int {
	t.Helper()
	plans, err := Plans(Target{Harness: "pi", AgentDir: agentDir, Command: "/opt/inter com/bin/intercom"}, add)
	if err != nil {
		t.Fatalf("plans (add %v): %v", add, err)
	}
	changed := 0
	for _, p := range plans {
		if p.Changed() {
			changed++
		}
		if _, err := Apply(p); err != nil {
			t.Fatalf("apply %s: %v", p.Path, err)
		}
	}
	return changed
}

func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return doc
}

// install pi writes the package (with the binary's path) and registers its
// directory in settings.json "packages" beside the user's own; a second
// install changes nothing; uninstall gives the settings back and removes
// the package directory.
func TestInstallPiRoundTrip(t *testing.T) {
	agent := t.TempDir()
	settings := filepath.Join(agent, "settings.json")
	before := `{"defaultModel": "x", "packages": ["npm:@example/pi-tools@1.0.0", {"source": "../other"}]}`
	if err := os.WriteFile(settings, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	if n := applyPi(t, agent, true); n != 5 {
		t.Errorf("install changed %d files, want 5 (4 package files, settings.json)", n)
	}
	pkg := filepath.Join(agent, PiPackageDir)
	if got := readJSON(t, filepath.Join(pkg, "intercom.json"))["command"]; got != "/opt/inter com/bin/intercom" {
		t.Errorf("intercom.json names %v, want the binary's path", got)
	}
	if data, err := os.ReadFile(filepath.Join(pkg, "index.ts")); err != nil || !strings.Contains(string(data), "load_intercom") {
		t.Errorf("index.ts not written (%v)", err)
	}
	if manifest := readJSON(t, filepath.Join(pkg, "package.json")); manifest["pi"] == nil {
		t.Errorf("package.json has no pi manifest: %v", manifest)
	}
	got := readJSON(t, settings)
	want := []any{"npm:@example/pi-tools@1.0.0", map[string]any{"source": "../other"}, pkg}
	if !reflect.DeepEqual(got["packages"], want) || got["defaultModel"] != "x" {
		t.Errorf("settings after install: %v, want packages %v and defaultModel kept", got, want)
	}
	if n := applyPi(t, agent, true); n != 0 {
		t.Errorf("a second install changed %d files, want 0", n)
	}
	if n := applyPi(t, agent, false); n != 5 {
		t.Errorf("uninstall changed %d files, want 5", n)
	}
	if _, err := os.Stat(pkg); !os.IsNotExist(err) {
		t.Errorf("the package directory is still there after uninstall (%v)", err)
	}
	var orig map[string]any
	_ = json.Unmarshal([]byte(before), &orig)
	if got := readJSON(t, settings); !reflect.DeepEqual(got, orig) {
		t.Errorf("settings after uninstall: %v, want the original %v", got, orig)
	}
	if n := applyPi(t, agent, false); n != 0 {
		t.Errorf("a second uninstall changed %d files, want 0", n)
	}
}

// Without settings before, uninstall removes the settings.json install made.
func TestInstallPiFreshAgentDir(t *testing.T) {
	agent := filepath.Join(t.TempDir(), ".pi", "agent")
	applyPi(t, agent, true)
	if got := readJSON(t, filepath.Join(agent, "settings.json"))["packages"]; !reflect.DeepEqual(got, []any{filepath.Join(agent, PiPackageDir)}) {
		t.Errorf("packages = %v", got)
	}
	applyPi(t, agent, false)
	ents, err := os.ReadDir(agent)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !strings.Contains(e.Name(), "intercom-backup") {
			t.Errorf("left in the agent dir after uninstall: %s", e.Name())
		}
	}
}

func TestPiAgentDir(t *testing.T) {
	if got := PiAgentDir("/x/agent", "/home/u"); got != "/x/agent" {
		t.Errorf("PI_CODING_AGENT_DIR not used: %s", got)
	}
	if got := PiAgentDir("", "/home/u"); got != "/home/u/.pi/agent" {
		t.Errorf("default = %s", got)
	}
}
