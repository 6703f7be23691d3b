package intercomcmd

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/intercom-dev/intercom/internal/hookexe"
	"github.com/intercom-dev/intercom/internal/install"
	"github.com/intercom-dev/intercom/internal/kongrun"
	"github.com/intercom-dev/intercom/internal/schema"
)

// InstallCmd writes intercom's hooks and MCP server into a harness's settings.
type InstallCmd struct {
	Harness string        `arg:"" enum:"claude,codex,gemini,pi,opencode,git-hook" help:"claude, codex, gemini, pi, opencode, or git-hook (this repository's pre-commit hook refusing reserved paths)."`
	Project bool          `help:"This project's settings (.claude/, .mcp.json, .codex/, .gemini/, .opencode/) instead of the user's." xor:"scope"`
	User    bool          `help:"The user's settings (default)." xor:"scope"`
	DryRun  bool          `name:"dry-run" help:"Show the changes as a diff; write nothing."`
	Dir     string        `help:"Project directory for --project (default: current)." type:"path" placeholder:"DIR"`
	Hold    time.Duration `help:"gemini only: AfterAgent waits up to DUR for a message and continues the turn with it (wakes an idle agent, but holds its turn open: what the user types waits)." zero:"off" placeholder:"DUR"`
}

// Help shows examples.
func (InstallCmd) Help() string {
	return `Merges intercom into the harness's settings, keeping everything else:
  claude: hooks SessionStart, UserPromptSubmit, PostToolUse, Stop, and an
          asyncRewake Stop hook ('intercom wait --rewake') that wakes an idle
          session, in .claude/settings.json; MCP server "intercom" in
          .mcp.json (project) or ~/.claude.json (user)
  codex:  the same hooks in .codex/hooks.json; in .codex/config.toml
          [features] hooks = true (merged into your features table, inline
          or not) and [mcp_servers.intercom] with the env_vars it needs;
          what was added is recorded in .codex/intercom-install.json
  gemini: hooks SessionStart, BeforeAgent, AfterTool, AfterAgent, and
          BeforeTool for reservations (timeouts in milliseconds) and MCP server "intercom" (trusted, with the
          INTERCOM_* variables in its env) in .gemini/settings.json, under
          GEMINI_CLI_HOME when that is set; --hold DUR makes AfterAgent
          wait for a message (wakes an idle agent, holds its turn open)
  opencode: the plugin intercom.ts in plugin/ of OpenCode's config directory
          ($OPENCODE_CONFIG_DIR, else $XDG_CONFIG_HOME/opencode, else
          ~/.config/opencode; .opencode/ with --project): delivery at tool
          boundaries, injection and wake-up by prompt, the intercom tool,
          INTERCOM_SESSION for the agent's shell commands
  git-hook: a pre-commit hook in this repository (its hooks directory,
          shared by its worktrees) refusing a commit of paths another
          session has reserved; INTERCOM_RESERVATIONS_OVERRIDE=1 overrides
          it, logged (see docs/reservations.md)
  pi:     intercom's Pi package (integrations/pi: the intercom,
          load_intercom and contact_supervisor tools, delivery, status,
          /intercom) in $PI_CODING_AGENT_DIR/intercom-package (default
          ~/.pi/agent), registered in its settings.json "packages"
Each changed settings file is backed up first (FILE.intercom-backup-<time>).
Running it again changes nothing. 'intercom uninstall' removes exactly what install
added. Codex runs hooks only once trusted: start codex once and choose
"Trust all and continue" at "Hooks need review" (or use /hooks).

Examples:
  intercom install claude --dry-run
  intercom install claude --project
  intercom install codex --user
  intercom install gemini
  intercom install opencode
  PI_CODING_AGENT_DIR=~/.pi/agent intercom install pi
  intercom install git-hook   # this repository: pre-commit refuses reserved paths`
}

func (i *InstallCmd) target() (install.Target, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return install.Target{}, err
	}
	exe, err := os.Executable()
	if err != nil {
		return install.Target{}, err
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	if i.Hold != 0 && i.Harness != "gemini" {
		return install.Target{}, kongrun.Usagef("--hold is for gemini only (Claude Code wakes through its asyncRewake hook)")
	}
	t := install.Target{Harness: i.Harness, Home: home, GeminiHome: os.Getenv("GEMINI_CLI_HOME"), GeminiHold: i.Hold, Command: exe}
	if hook, ok := hookexe.Beside(exe); ok { // the cheaper hook process (internal/hookexe)
		t.HookCommand = hook
	}
	if i.Harness == "opencode" {
		t.ConfigDir = install.OpenCodeDir(os.Getenv, home)
	}
	if i.Harness == "pi" {
		if i.Project {
			return t, kongrun.Usagef("install pi: --project is not supported (Pi reads project packages only once the project is trusted); install for the user")
		}
		t.AgentDir = install.PiAgentDir(os.Getenv("PI_CODING_AGENT_DIR"), home)
	}
	if i.Project || i.Harness == "git-hook" {
		t.Project = i.Dir
		if t.Project == "" {
			t.Project, _ = os.Getwd()
		}
	}
	return t, nil
}

// Run installs.
func (i *InstallCmd) Run(e *env) error { return runInstall(e, i, true) }

// UninstallCmd removes what install added.
type UninstallCmd struct {
	InstallCmd
}

// Help shows examples.
func (UninstallCmd) Help() string {
	return "Removes exactly the hooks and MCP entries 'intercom install' added; other settings stay.\n\nExamples:\n  intercom uninstall claude\n  intercom uninstall codex --project --dry-run\n  intercom uninstall gemini"
}

// Run uninstalls.
func (u *UninstallCmd) Run(e *env) error { return runInstall(e, &u.InstallCmd, false) }

func runInstall(e *env, i *InstallCmd, add bool) error {
	t, err := i.target()
	if err != nil {
		return err
	}
	plans, err := install.Plans(t, add)
	if err != nil {
		return err
	}
	results := []schema.InstalledFile{}
	for _, p := range plans {
		r := schema.InstalledFile{Path: p.Path, Changed: p.Changed()}
		if i.DryRun {
			if p.Changed() {
				r.Diff = install.Diff(p)
			}
		} else if r.Backup, err = install.Apply(p); err != nil {
			return fmt.Errorf("write %s: %w", p.Path, err)
		} else if i.Harness == "git-hook" {
			err = install.FinishGitHook(p)
		}
		if err != nil {
			return err
		}
		results = append(results, r)
	}
	if e.g.JSON {
		return e.printJSON(schema.Install{Harness: i.Harness, Installed: add, DryRun: i.DryRun, Files: results})
	}
	verb := "installed in"
	if !add {
		verb = "removed from"
	}
	for _, r := range results {
		switch {
		case !r.Changed:
			fmt.Fprintf(e.stdout, "%s: unchanged\n", r.Path)
		case i.DryRun:
			fmt.Fprint(e.stdout, r.Diff)
		default:
			fmt.Fprintf(e.stdout, "%s: intercom %s it", r.Path, verb)
			if r.Backup != "" {
				fmt.Fprintf(e.stdout, " (backup: %s)", r.Backup)
			}
			fmt.Fprintln(e.stdout)
		}
	}
	return nil
}
