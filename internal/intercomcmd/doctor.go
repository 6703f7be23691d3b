package intercomcmd

import (
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/intercom-dev/intercom/internal/buildinfo"
	"github.com/intercom-dev/intercom/internal/doctor"
	"github.com/intercom-dev/intercom/internal/kongrun"
	"github.com/intercom-dev/intercom/internal/schema"
)

// DoctorCmd checks the broker and every agent harness on the machine.
type DoctorCmd struct {
	Harness []string      `arg:"" optional:"" enum:"claude,codex,gemini,pi,opencode" help:"Check only these harnesses (claude, codex, gemini, pi, opencode; default: all, and the broker)."`
	Dir     string        `help:"Project whose settings (.claude/, .mcp.json, .codex/, ...) are checked too (default: current directory)." type:"path" placeholder:"DIR"`
	Timeout time.Duration `default:"15s" help:"Time each program doctor starts (--version, the MCP server, codex app-server) has to answer." placeholder:"DUR"`
}

// Help shows examples.
func (DoctorCmd) Help() string {
	return `Checks the broker (does its socket answer, which version runs; it is not
started) and each harness found on this machine (its executable on PATH, or
its settings): its version (<bin> --version); in the user's and this
project's settings, whether they parse, whether intercom is installed
(entries complete, their intercom binary present), whether the hooks run
(Claude Code: all there, disableAllHooks not set; Codex: [features] hooks on
and each hook trusted, asked from 'codex app-server'), and whether the MCP
server answers: it is started exactly as the settings say and gets an MCP
initialize and tools/list. One row per check: ok, warn, fail, or none (not
found, not installed); each problem has a fix line. A harness that is not
found is not a failure. Exit status 1 when a check fails.

Examples:
  intercom doctor
  intercom doctor codex
  intercom doctor --dir ~/src/app --json`
}

// Run checks and prints.
func (d *DoctorCmd) Run(e *env) error {
	home, err := os.UserHomeDir()
	if err != nil {
		return err
	}
	dir := d.Dir
	if dir == "" {
		dir, _ = os.Getwd()
	}
	report := doctor.Run(e.ctx, doctor.Options{
		Home: home, Dir: dir, Env: os.Environ(), IntercomHome: e.g.Home, Socket: e.g.Socket,
		Version: buildinfo.Version(), Timeout: d.Timeout, Harnesses: d.Harness, ConfigErr: e.configErr,
	})
	if e.g.JSON {
		if err := e.printJSON(report); err != nil {
			return err
		}
	} else {
		printDoctor(e, report, home)
	}
	switch {
	case report.OK:
		return nil
	case e.g.JSON: // the report says it ("ok": false)
		return kongrun.Exit(kongrun.StatusFailure, "")
	}
	return kongrun.Exit(kongrun.StatusFailure, "doctor: something installed is broken (the fail rows say what to fix)")
}

// printDoctor prints one aligned row per check, and under a problem its
// fix.
func printDoctor(e *env, r schema.Doctor, home string) {
	short := func(s string) string {
		if home == "" || home == "/" {
			return s
		}
		return strings.ReplaceAll(s, home+"/", "~/")
	}
	w := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	for _, c := range r.Checks {
		who := c.Harness
		if c.Scope != "" {
			who += " (" + c.Scope + ")"
		}
		status := c.Status
		if status == doctor.None {
			status = "-"
		}
		detail := c.Detail
		if c.Path != "" && !strings.Contains(detail, c.Path) {
			detail += " [" + c.Path + "]"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", who, c.Check, status, short(detail))
		if c.Fix != "" && c.Status != doctor.OK {
			fmt.Fprintf(w, "\t\t\tfix: %s\n", short(c.Fix))
		}
	}
	_ = w.Flush()
}
