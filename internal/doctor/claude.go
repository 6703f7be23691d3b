package doctor

import (
	"context"
	"fmt"
	"strings"

	"github.com/intercom-dev/intercom/internal/hooks"
	"github.com/intercom-dev/intercom/internal/install"
)

// claude is Claude Code: read with install's rules (hooks in
// .claude/settings.json, the MCP server in ~/.claude.json or .mcp.json).
var claude = harness{name: "claude", binary: "claude", inspect: func(o *Options, project bool) (finding, bool) {
	in := install.Inspect(installTarget("claude", o, project))
	f := installedFinding("claude", in, project)
	f.hooks = func(context.Context, *runner) (string, string, string) {
		switch {
		case in.HooksDisabled:
			return Fail, "disableAllHooks is true in " + in.HooksFile + ": Claude Code runs no hooks", "remove disableAllHooks from " + in.HooksFile
		case len(in.MissingHooks()) > 0 || !in.Rewake:
			return Fail, "missing: " + strings.Join(missingHooks(in, true), ", "), f.fix
		}
		return OK, fmt.Sprintf("%s and the asyncRewake Stop hook, enabled", strings.Join(installedEvents(in), ", ")), ""
	}
	if project {
		f.mcpApproval = claudeMCPApproval
	}
	return f, in.HooksExists || in.MCPExists
}}

// claudeMCPApproval asks Claude Code whether it starts the project's
// .mcp.json server intercom: `claude mcp list` in the project says
// "Pending approval" until the user approved it (Claude Code's own rule
// weighs the project's trust, its settings files and the git checkout).
// Without claude on PATH, or without an intercom line, it is not checked.
func claudeMCPApproval(ctx context.Context, r *runner) (status, detail, fix string) {
	bin := r.lookPath("claude")
	if bin == "" {
		return OK, "", ""
	}
	out, err := r.output(ctx, bin, "mcp", "list")
	if err != nil {
		return Warn, "approval not checked: " + err.Error(), ""
	}
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "intercom:") {
			continue
		}
		switch state := line[strings.LastIndex(line, " - ")+1:]; {
		case strings.Contains(state, "Connected"):
			return OK, "", ""
		case strings.Contains(state, "Pending approval"):
			return Warn, "Claude Code has not approved it yet (claude mcp list: Pending approval)",
				"start claude in " + r.o.Dir + " and approve intercom (see /mcp)"
		default:
			return Warn, "claude mcp list says: " + strings.TrimSpace(strings.TrimPrefix(state, "-")), ""
		}
	}
	return OK, "", ""
}

// installTarget is install's Target for a harness in one scope.
func installTarget(name string, o *Options, project bool) install.Target {
	t := install.Target{Harness: name, Home: o.Home}
	if project {
		t.Project = o.Dir
	}
	return t
}

// installedFinding is what install.Inspect found, for a harness install
// writes (Claude Code, Codex).
func installedFinding(name string, in install.Installed, project bool) finding {
	f := finding{present: in.Any(), mcp: in.MCP, fix: "intercom install " + name + scopeFlag(project)}
	for _, file := range []struct {
		path   string
		exists bool
		err    error
	}{{in.HooksFile, in.HooksExists, in.HooksErr}, {in.MCPFile, in.MCPExists, in.MCPErr}} {
		if file.exists {
			f.files = append(f.files, file.path)
		}
		if file.err != nil {
			f.broken = append(f.broken, file.err.Error())
		}
	}
	if len(in.Hooks) == 0 {
		f.missing = append(f.missing, "hooks in "+in.HooksFile)
	}
	if in.MCP == nil {
		f.missing = append(f.missing, "MCP server in "+in.MCPFile)
	}
	for _, ev := range installedEvents(in) {
		for _, cmd := range in.Hooks[ev] {
			f.programs = append(f.programs, install.HookBinary(cmd))
		}
	}
	if in.MCP != nil {
		f.programs = append(f.programs, in.MCP.Command)
	}
	return f
}

// installedEvents are the events with an intercom hook, in install order.
func installedEvents(in install.Installed) []string {
	var out []string
	for _, ev := range hooks.Events {
		if len(in.Hooks[ev]) > 0 {
			out = append(out, ev)
		}
	}
	return out
}

// missingHooks names the hooks install writes that are not there.
func missingHooks(in install.Installed, rewake bool) []string {
	var out []string
	for _, ev := range in.MissingHooks() {
		out = append(out, ev+" hook")
	}
	if rewake && !in.Rewake {
		out = append(out, "asyncRewake Stop hook")
	}
	return out
}
