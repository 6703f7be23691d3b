package install

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

var codexT = Target{Harness: "codex", Command: "/opt/inter com/bin/intercom"}

// roundTrip installs twice and uninstalls through Plans and Apply on a real
// file, returning the installed text; uninstall must give back want.
func roundTrip(t *testing.T, before, want string) string {
	t.Helper()
	dir := t.TempDir()
	tg := codexT
	tg.Project = dir
	cfg := filepath.Join(dir, ".codex", "config.toml")
	if before != "" {
		if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cfg, []byte(before), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	apply := func(add bool) int {
		t.Helper()
		return applyAll(t, tg, add)
	}
	apply(true)
	installed, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Features   map[string]any            `toml:"features"`
		MCPServers map[string]map[string]any `toml:"mcp_servers"`
	}
	if err := toml.Unmarshal(installed, &doc); err != nil {
		t.Fatalf("installed config is not TOML: %v\n%s", err, installed)
	}
	if doc.Features["hooks"] != true || doc.Features["codex_hooks"] != nil {
		t.Fatalf("features %v, want hooks = true and no codex_hooks:\n%s", doc.Features, installed)
	}
	srv := doc.MCPServers["intercom"]
	if srv["command"] != codexT.Command || strings.Join(toStrings(srv["args"]), " ") != "mcp --harness codex" || !strings.Contains(strings.Join(toStrings(srv["env_vars"]), " "), "INTERCOM_HOME") {
		t.Fatalf("mcp server %v:\n%s", srv, installed)
	}
	// Codex waits for the tool as long as an ask waits for its reply.
	if srv["tool_timeout_sec"] != int64(CodexToolTimeoutSec) {
		t.Fatalf("mcp server tool_timeout_sec %v, want %d:\n%s", srv["tool_timeout_sec"], CodexToolTimeoutSec, installed)
	}
	if strings.Count(string(installed), "[features]")+strings.Count(string(installed), "features =") > 1 {
		t.Fatalf("features defined twice:\n%s", installed)
	}
	if n := apply(true); n != 0 {
		t.Fatalf("second install changed %d files", n)
	}
	apply(false)
	got, err := os.ReadFile(cfg)
	if os.IsNotExist(err) {
		got = nil
	}
	if string(got) != want {
		t.Fatalf("after uninstall:\n%s\nwant:\n%s", got, want)
	}
	if _, err := os.Stat(recordPath(cfg)); !os.IsNotExist(err) {
		t.Fatalf("install record left after uninstall")
	}
	return string(installed)
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func TestCodexConfigEdits(t *testing.T) {
	for _, tc := range []struct {
		name, before, want string
		check              func(t *testing.T, installed string)
	}{
		{name: "no file", before: "", want: ""},
		{name: "inline features", before: "# my config\nmodel = \"o4\"  # keep me\nfeatures = { multi_agent = true }\n\n[mcp_servers.other]\ncommand = \"x\"\n",
			check: func(t *testing.T, s string) {
				if !strings.Contains(s, "features = { multi_agent = true, hooks = true }") || strings.Contains(s, "[features]") {
					t.Fatalf("inline table not extended in place:\n%s", s)
				}
			}},
		{name: "empty inline features", before: "features = {}\n"},
		{name: "trailing comma inline", before: "features = { a = true, }\n"},
		{name: "features table", before: "[features]\nweb_search = true\n\n[profiles.x]\nmodel = \"y\"\n",
			check: func(t *testing.T, s string) {
				if !strings.HasPrefix(s, "[features]\nhooks = true\nweb_search = true\n") {
					t.Fatalf("hooks not added to the [features] table:\n%s", s)
				}
			}},
		{name: "dotted features", before: "features.web_search = true\nmodel = \"o4\"\n"},
		{name: "hooks off", before: "[features]\nhooks = false # off for now\n"},
		{name: "hooks already on", before: "[features]\nhooks = true\n", want: "[features]\nhooks = true\n"},
		{name: "inline servers", before: "mcp_servers = { other = { command = \"x\" } }\n",
			check: func(t *testing.T, s string) {
				if strings.Contains(s, "[mcp_servers.intercom]") || !strings.Contains(s, ", intercom = {") {
					t.Fatalf("server not added inside the inline table:\n%s", s)
				}
			}},
		{name: "server added by codex mcp add", before: "[mcp_servers.intercom]\ncommand = \"intercom\"\nargs = [\"mcp\"]\n\n[other]\nx = 1\n"},
		{name: "servers table", before: "[mcp_servers]\n\n[mcp_servers.github]\nurl = \"https://example.invalid\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if want == "" {
				want = tc.before
			}
			installed := roundTrip(t, tc.before, want)
			if tc.check != nil {
				tc.check(t, installed)
			}
		})
	}
}

func TestCodexConfigLegacyBlockAndCodexWrites(t *testing.T) {
	user := "model = \"o4\"\n"
	legacy := user + "\n" + tomlBegin + "\n[mcp_servers.intercom]\ncommand = \"/old/intercom\"\nargs = [\"mcp\"]\n\n[features]\ncodex_hooks = true\n" + tomlEnd + "\n"
	data, rec, err := codexT.editCodexConfig([]byte(legacy), codexRecord{}, true)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "codex_hooks") || strings.Contains(string(data), tomlBegin) || strings.Count(string(data), "[mcp_servers.intercom]") != 1 {
		t.Fatalf("legacy block not replaced:\n%s", data)
	}
	// Codex itself writes trust and project entries later; uninstall keeps them.
	data = append(data, "\n[hooks.state.\"/home/u/.codex/hooks.json:stop:0:0\"]\ntrusted_hash = \"sha256:ab\"\n"...)
	out, _, err := codexT.editCodexConfig(data, rec, false)
	if err != nil {
		t.Fatal(err)
	}
	want := user + "\n[hooks.state.\"/home/u/.codex/hooks.json:stop:0:0\"]\ntrusted_hash = \"sha256:ab\"\n"
	if string(out) != want {
		t.Fatalf("uninstall left:\n%q\nwant:\n%q", out, want)
	}
}

func TestCodexConfigRefusesWhatItCannotEdit(t *testing.T) {
	for _, bad := range []string{"features = [\n", "features = 3\n", "mcp_servers.intercom.command = \"x\"\n"} {
		if _, _, err := codexT.editCodexConfig([]byte(bad), codexRecord{}, true); err == nil {
			t.Errorf("install into %q: no error", bad)
		}
	}
}

// HookBinary takes back what hookCommand wrote, whatever the path holds.
func TestHookBinaryUndoesQuote(t *testing.T) {
	for _, bin := range []string{"/usr/bin/intercom", "/opt/inter com/intercom", "/it's/in'ter com", `/a"b/intercom`} {
		tg := Target{Harness: "claude", Command: bin}
		if got := HookBinary(tg.hookCommand("Stop")); got != bin {
			t.Errorf("HookBinary(%q) = %q, want %q", tg.hookCommand("Stop"), got, bin)
		}
	}
}
