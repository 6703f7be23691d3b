package install

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Inspect reads back exactly what Plans and Apply wrote, and nothing once
// uninstalled.
func TestInspectReadsBackInstall(t *testing.T) {
	for _, harness := range []string{"claude", "codex"} {
		t.Run(harness, func(t *testing.T) {
			tg := Target{Harness: harness, Home: t.TempDir(), Command: "/opt/inter com/intercom"}
			if in := Inspect(tg); in.Any() || in.HooksExists || in.MCPExists {
				t.Fatalf("before install: %+v", in)
			}
			applyPlans(t, tg, true)
			in := Inspect(tg)
			if in.HooksErr != nil || in.MCPErr != nil || len(in.MissingHooks()) > 0 || in.MCP == nil {
				t.Fatalf("after install: %+v", in)
			}
			if in.MCP.Command != tg.Command || !slices.Equal(in.MCP.Args, []string{"mcp", "--harness", harness}) {
				t.Errorf("MCP server %+v", in.MCP)
			}
			for ev, cmds := range in.Hooks {
				if len(cmds) != 1 || HookBinary(cmds[0]) != tg.Command {
					t.Errorf("%s hooks %q", ev, cmds)
				}
			}
			switch harness {
			case "claude":
				if !in.Rewake {
					t.Errorf("no asyncRewake Stop hook")
				}
			case "codex":
				if in.HooksFeature == nil || !*in.HooksFeature || !slices.Contains(in.MCP.EnvVars, "INTERCOM_HOME") {
					t.Errorf("codex features.hooks %v env_vars %v", in.HooksFeature, in.MCP.EnvVars)
				}
			}
			applyPlans(t, tg, false)
			if in := Inspect(tg); in.Any() {
				t.Errorf("after uninstall: %+v", in)
			}
			// A file that does not parse is reported, not fatal.
			hooksFile, _ := tg.Files()
			if err := os.MkdirAll(filepath.Dir(hooksFile), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(hooksFile, []byte("{"), 0o644); err != nil {
				t.Fatal(err)
			}
			if in := Inspect(tg); in.HooksErr == nil || !in.HooksExists {
				t.Errorf("malformed %s: %+v", hooksFile, in)
			}
		})
	}
}

// applyPlans applies Plans(tg, add), failing the test on any error.
func applyPlans(t *testing.T, tg Target, add bool) {
	t.Helper()
	plans, err := Plans(tg, add)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range plans {
		if _, err := Apply(p); err != nil {
			t.Fatal(err)
		}
	}
}
