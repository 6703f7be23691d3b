package install

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Install writes the plugin with the binary's absolute path, a second
// install changes nothing, and uninstall removes exactly that file (no
// backups left beside it, the user's other plugins kept).
func TestOpenCodeInstallRoundTrip(t *testing.T) {
	cfg := t.TempDir()
	tg := Target{Harness: "opencode", Home: t.TempDir(), ConfigDir: cfg, Command: "/opt/inter com/bin/intercom"}
	other := filepath.Join(cfg, "plugin", "mine.ts")
	if err := os.MkdirAll(filepath.Dir(other), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, []byte("export const Mine = async () => ({})\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if n := applyAll(t, tg, true); n != 1 {
		t.Fatalf("install changed %d files, want 1", n)
	}
	path := filepath.Join(cfg, "plugin", "intercom.ts")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), strconv.Quote(tg.Command)) || strings.Contains(string(data), "__INTERCOM_BIN__") {
		t.Errorf("the plugin does not name %s as the intercom binary", tg.Command)
	}
	if n := applyAll(t, tg, true); n != 0 {
		t.Errorf("a second install changed %d files", n)
	}
	tg.Command = "/usr/local/bin/intercom"
	if n := applyAll(t, tg, true); n != 1 {
		t.Errorf("install with another binary changed %d files, want 1", n)
	}
	if n := applyAll(t, tg, false); n != 1 {
		t.Fatalf("uninstall changed %d files, want 1", n)
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 || ents[0].Name() != "mine.ts" {
		t.Errorf("after uninstall plugin/ holds %v, want only mine.ts", ents)
	}
	if n := applyAll(t, tg, false); n != 0 {
		t.Errorf("a second uninstall changed %d files", n)
	}
}

// A plugin file of the same name that intercom did not write is neither
// overwritten nor removed.
func TestOpenCodeInstallKeepsForeignFile(t *testing.T) {
	cfg := t.TempDir()
	tg := Target{Harness: "opencode", ConfigDir: cfg, Command: "/bin/intercom"}
	path := filepath.Join(cfg, "plugin", "intercom.ts")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("// someone else's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Plans(tg, true); err == nil || !strings.Contains(err.Error(), "not written by intercom") {
		t.Errorf("install over a foreign file: %v, want a refusal", err)
	}
	if n := applyAll(t, tg, false); n != 0 {
		t.Errorf("uninstall changed %d files, want none", n)
	}
	if data, _ := os.ReadFile(path); string(data) != "// someone else's\n" {
		t.Errorf("the foreign file changed: %q", data)
	}
}

// The plugin goes where OpenCode looks: OPENCODE_CONFIG_DIR, else
// XDG_CONFIG_HOME/opencode, else ~/.config/opencode; .opencode/ for a
// project.
func TestOpenCodePluginLocation(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"OPENCODE_CONFIG_DIR": "/c", "XDG_CONFIG_HOME": "/x"}, "/c"},
		{map[string]string{"XDG_CONFIG_HOME": "/x"}, "/x/opencode"},
		{nil, "/home/u/.config/opencode"},
	} {
		if got := OpenCodeDir(env(c.env), "/home/u"); got != c.want {
			t.Errorf("OpenCodeDir(%v) = %s, want %s", c.env, got, c.want)
		}
	}
	user := Target{Harness: "opencode", Home: "/home/u"}
	if got := user.openCodePluginFile(); got != "/home/u/.config/opencode/plugin/intercom.ts" {
		t.Errorf("user plugin file %s", got)
	}
	project := Target{Harness: "opencode", Home: "/home/u", ConfigDir: "/c", Project: "/src/api"}
	if got := project.openCodePluginFile(); got != "/src/api/.opencode/plugin/intercom.ts" {
		t.Errorf("project plugin file %s", got)
	}
}
