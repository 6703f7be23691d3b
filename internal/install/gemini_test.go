package install

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// applyAll plans install (add) or uninstall for t and applies the plans,
// returning how many files changed.
func applyAll(t *testing.T, tg Target, add bool) int {
	t.Helper()
	plans, err := Plans(tg, add)
	if err != nil {
		t.Fatalf("plans (add %v): %v", add, err)
	}
	changed := 0
	for _, p := range plans {
		if p.Changed() {
			changed++
		}
		if _, err := Apply(p); err != nil {
			t.Fatal(err)
		}
	}
	return changed
}

const userGeminiSettings = `{
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "hooks": {
    "AfterTool": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "./lint.sh", "timeout": 5000}]}]
  },
  "mcpServers": {"github": {"command": "gh-mcp", "args": ["serve"]}}
}
`

func mustMarshal(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Install merges hooks and the MCP server into the user's settings under
// GEMINI_CLI_HOME, keeps everything else, changes nothing when run again,
// and uninstall gives the same settings back.
func TestGeminiInstallMergesAndUninstallsExactly(t *testing.T) {
	gemHome := t.TempDir()
	tg := Target{Harness: "gemini", Home: t.TempDir(), GeminiHome: gemHome, Command: "/opt/inter com/intercom"}
	path := filepath.Join(gemHome, ".gemini", "settings.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(userGeminiSettings), 0o600); err != nil {
		t.Fatal(err)
	}
	if n := applyAll(t, tg, true); n != 1 {
		t.Fatalf("install changed %d files, want 1", n)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Security map[string]any `json:"security"`
		Hooks    map[string][]struct {
			Matcher string           `json:"matcher"`
			Hooks   []map[string]any `json:"hooks"`
		} `json:"hooks"`
		MCPServers map[string]map[string]any `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("installed settings are not JSON: %v\n%s", err, data)
	}
	if doc.Security == nil || doc.MCPServers["github"] == nil {
		t.Errorf("install lost the user's settings:\n%s", data)
	}
	if g := doc.Hooks["BeforeTool"]; len(g) != 1 || g[0].Matcher != "write_file|replace|run_shell_command" {
		t.Errorf("BeforeTool (reservations) hook %+v, want one with the edit tools' matcher", g)
	}
	for _, ev := range []string{"SessionStart", "BeforeAgent", "AfterTool", "AfterAgent", "BeforeTool"} {
		groups := doc.Hooks[ev]
		last := groups[len(groups)-1].Hooks[0]
		if want := "'/opt/inter com/intercom' hook gemini " + ev; last["command"] != want || last["timeout"] != float64(30000) {
			t.Errorf("%s hook %v, want command %q with timeout 30000 (milliseconds)", ev, last, want)
		}
	}
	if got := doc.Hooks["AfterTool"]; len(got) != 2 || got[0].Matcher != "write_file" {
		t.Errorf("the user's AfterTool hook was not kept first: %+v", got)
	}
	server := doc.MCPServers["intercom"]
	env, _ := server["env"].(map[string]any)
	if server["command"] != tg.Command || server["trust"] != true || env["INTERCOM_HOME"] != "$INTERCOM_HOME" {
		t.Errorf("MCP server entry %v", server)
	}
	if n := applyAll(t, tg, true); n != 0 {
		t.Errorf("a second install changed %d files, want none", n)
	}
	if n := applyAll(t, tg, false); n != 1 {
		t.Fatalf("uninstall changed %d files, want 1", n)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got, want any
	if err := json.Unmarshal(after, &got); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal([]byte(userGeminiSettings), &want)
	if g, w := mustMarshal(got), mustMarshal(want); g != w {
		t.Errorf("uninstall did not give the settings back:\n%s\nwant:\n%s", after, userGeminiSettings)
	}
}

// Without settings, install creates the file and uninstall removes it;
// --project writes <project>/.gemini/settings.json.
func TestGeminiInstallFreshProject(t *testing.T) {
	proj := t.TempDir()
	tg := Target{Harness: "gemini", Home: t.TempDir(), Project: proj, Command: "/usr/bin/intercom"}
	path := filepath.Join(proj, ".gemini", "settings.json")
	applyAll(t, tg, true)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("install wrote no %s: %v", path, err)
	}
	applyAll(t, tg, false)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("uninstall left %s (install created it): %v", path, err)
	}
}

// A settings file that is not JSON is refused with one line naming it,
// and is left alone.
func TestGeminiInstallRefusesBrokenJSON(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, ".gemini", "settings.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	broken := "{ \"security\": { // a comment\n"
	if err := os.WriteFile(path, []byte(broken), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Plans(Target{Harness: "gemini", Home: home, Command: "/usr/bin/intercom"}, true)
	if err == nil || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("install over broken JSON: %v, want one line naming %s", err, path)
	}
	if data, _ := os.ReadFile(path); string(data) != broken {
		t.Errorf("the broken file was changed: %q", data)
	}
}

// --hold makes only the AfterAgent hook wait, with its timeout (in
// milliseconds) past the wait; installing again without it takes it back.
func TestGeminiInstallHold(t *testing.T) {
	tg := Target{Harness: "gemini", Home: t.TempDir(), Command: "/usr/bin/intercom", GeminiHold: 10 * time.Minute}
	applyAll(t, tg, true)
	hooksOf := func() map[string]map[string]any {
		t.Helper()
		data, err := os.ReadFile(tg.geminiSettings())
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Hooks map[string][]struct {
				Hooks []map[string]any `json:"hooks"`
			} `json:"hooks"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		out := map[string]map[string]any{}
		for ev, groups := range doc.Hooks {
			if len(groups) != 1 || len(groups[0].Hooks) != 1 {
				t.Fatalf("%s: %d groups, want one intercom hook", ev, len(groups))
			}
			out[ev] = groups[0].Hooks[0]
		}
		return out
	}
	got := hooksOf()
	if h := got["AfterAgent"]; h["command"] != "/usr/bin/intercom hook gemini AfterAgent --hold 10m0s" || h["timeout"] != float64(630000) {
		t.Errorf("AfterAgent hook %v, want --hold 10m0s with timeout 630000 ms", h)
	}
	if h := got["AfterTool"]; strings.Contains(h["command"].(string), "--hold") || h["timeout"] != float64(30000) {
		t.Errorf("AfterTool hook %v holds too", h)
	}
	tg.GeminiHold = 0
	applyAll(t, tg, true)
	if h := hooksOf()["AfterAgent"]; h["command"] != "/usr/bin/intercom hook gemini AfterAgent" {
		t.Errorf("after installing without --hold: %v", h)
	}
}
