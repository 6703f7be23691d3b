package install

import (
	"testing"
)

// With intercom-hook beside intercom (Target.HookCommand), every hook
// runs it; installing over hooks an older install wrote (`intercom hook`)
// replaces them, one entry per event; uninstall removes all of them. The
// rewake wait and the MCP server stay the intercom binary's.
func TestInstallWritesTheHookExecutable(t *testing.T) {
	for _, harness := range []string{"claude", "codex", "gemini"} {
		t.Run(harness, func(t *testing.T) {
			home := t.TempDir()
			old := Target{Harness: harness, Home: home, Command: "/opt/inter com/intercom"}
			cur := old
			cur.HookCommand = "/opt/inter com/intercom-hook"
			applyPlans(t, old, true)
			applyPlans(t, cur, true)
			in := Inspect(cur)
			if len(in.MissingHooks()) > 0 || in.MCP == nil {
				t.Fatalf("after install: %+v", in)
			}
			for ev, cmds := range in.Hooks {
				if len(cmds) != 1 || HookBinary(cmds[0]) != cur.HookCommand {
					t.Errorf("%s hooks %q, want one running %s", ev, cmds, cur.HookCommand)
				}
			}
			if len(in.PreTool) != 1 || HookBinary(in.PreTool[0]) != cur.HookCommand {
				t.Errorf("pre-tool hooks %q, want one running %s", in.PreTool, cur.HookCommand)
			}
			if in.MCP.Command != cur.Command {
				t.Errorf("MCP server runs %s, want %s", in.MCP.Command, cur.Command)
			}
			if harness == "claude" && !in.Rewake {
				t.Errorf("no asyncRewake Stop hook")
			}
			applyPlans(t, old, false) // an older intercom's uninstall knows them too
			if in := Inspect(cur); in.Any() {
				t.Errorf("after uninstall: %+v", in)
			}
		})
	}
}

// ours takes the hook executable's commands for its own harness only.
func TestOursKnowsTheHookExecutable(t *testing.T) {
	claude := Target{Harness: "claude"}
	for cmd, want := range map[string]bool{
		"/bin/intercom-hook claude PostToolUse":          true,
		"'/my dir/intercom-hook' claude Stop":            true,
		"/bin/intercom-hook codex PostToolUse":           false,
		"/bin/intercom hook claude Stop":                 true,
		"/bin/other-hook claude Stop":                    false,
		"/bin/intercom wait --rewake --timeout 3300s":    true,
		"/bin/intercom-hook gemini AfterAgent --hold 5m": false,
	} {
		if got := claude.ours(cmd); got != want {
			t.Errorf("ours(%q) = %v, want %v", cmd, got, want)
		}
	}
}
