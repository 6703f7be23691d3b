// Package doctor is `intercom doctor`: it checks every agent harness found
// on the machine (its version, whether intercom is installed in it,
// whether its settings parse, whether its hooks are enabled and trusted,
// whether the MCP server it would start answers) and the broker, and says
// in one line per problem what to fix.
//
// Each harness is one file holding a value of type harness: its name, its
// executable and an inspect function reading its settings in one scope
// (user or project). The checks common to all of them (version, config,
// installed, mcp) are run here from what inspect found; a harness adds its
// own hooks check through finding.hooks. Claude Code and Codex are read with
// package install's own rules (install.Inspect), so doctor and install
// agree on what "installed" means.
package doctor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/intercom-dev/intercom/internal/hookexe"
	"github.com/intercom-dev/intercom/internal/install"
	"github.com/intercom-dev/intercom/internal/schema"
)

// Check statuses.
const (
	OK   = "ok"
	Warn = "warn"
	Fail = "fail"
	None = "none" // not found, not installed, not checked: no problem
)

// Options say where to look.
type Options struct {
	Home string   // the user's home directory (user-scope settings)
	Dir  string   // the project directory (project-scope settings); "" skips them
	Env  []string // environment of the programs doctor runs (PATH finds the harnesses)
	// IntercomHome and Socket locate the broker ("" for the defaults).
	IntercomHome, Socket string
	Version              string        // this intercom's version
	Timeout              time.Duration // for each program doctor runs (default 15 s)
	// Harnesses limits the check to these (install's names); empty: all.
	Harnesses []string
	// ConfigErr is why intercom's own config.json did not load, if it did
	// not: reported as a failed check.
	ConfigErr error
}

// harness is one agent harness doctor knows; each lives in its own file.
type harness struct {
	name   string // install's name: claude, codex, ...
	binary string // executable looked up on PATH
	// inspect reads the harness's settings in one scope (user when project
	// is false); found is false when it has no settings file there.
	inspect func(o *Options, project bool) (f finding, found bool)
}

// harnesses are checked in this order.
var harnesses = []harness{claude, codex, gemini, pi, opencode}

// finding is what one scope's settings say.
type finding struct {
	files   []string // settings files read (those that exist)
	broken  []string // "FILE: why" for each that cannot be read or parsed
	present bool     // intercom's entries are there (some of them)
	missing []string // what install writes that is not there
	// programs are the intercom binaries the entries run: each must exist.
	programs []string
	mcp      *install.MCPServer // the MCP server entry (nil: none)
	// hooks checks whether the installed hooks run (enabled, trusted); nil
	// when the harness has none to check. It runs only when every file
	// parsed.
	hooks func(ctx context.Context, r *runner) (status, detail, fix string)
	// mcpApproval, when set, says whether the harness will start the MCP
	// server that answers (Claude Code's approval of a project's server).
	mcpApproval func(ctx context.Context, r *runner) (status, detail, fix string)
	fix         string // the install command for this scope
}

// Run checks the broker and every harness found.
func Run(ctx context.Context, o Options) schema.Doctor {
	if o.Timeout <= 0 {
		o.Timeout = 15 * time.Second
	}
	r := &runner{o: &o}
	var checks []schema.DoctorCheck
	if o.ConfigErr != nil {
		checks = append(checks, schema.DoctorCheck{Harness: "intercom", Check: "config", Status: Fail, Detail: o.ConfigErr.Error(),
			Fix: "correct intercom's config.json (docs/operations.md lists its keys); every intercom command refuses it until then"})
	}
	if len(o.Harnesses) == 0 {
		checks = append(checks, brokerCheck(ctx, &o))
	}
	for _, h := range harnesses {
		if len(o.Harnesses) == 0 || slices.Contains(o.Harnesses, h.name) {
			checks = append(checks, checkHarness(ctx, r, h)...)
		}
	}
	ok := true
	for _, c := range checks {
		ok = ok && c.Status != Fail
	}
	return schema.Doctor{OK: ok, Checks: checks}
}

// checkHarness is the rows of one harness.
func checkHarness(ctx context.Context, r *runner, h harness) []schema.DoctorCheck {
	row := func(scope, check, status, detail, fix, path string) schema.DoctorCheck {
		return schema.DoctorCheck{Harness: h.name, Scope: scope, Check: check, Status: status, Detail: detail, Fix: fix, Path: path}
	}
	bin := r.lookPath(h.binary)
	type scoped struct {
		name string
		f    finding
	}
	var scopes []scoped
	if f, ok := h.inspect(r.o, false); ok {
		scopes = append(scopes, scoped{"user", f})
	}
	if r.o.Dir != "" && !samePath(r.o.Dir, r.o.Home) {
		if f, ok := h.inspect(r.o, true); ok {
			scopes = append(scopes, scoped{"project", f})
		}
	}
	if bin == "" && len(scopes) == 0 {
		return []schema.DoctorCheck{row("", "found", None, "not found (no "+h.binary+" on PATH, no settings)", "", "")}
	}
	var out []schema.DoctorCheck
	if bin == "" {
		out = append(out, row("", "version", Warn, h.binary+" is not on PATH (its settings are here)", "install it, or put it on PATH", ""))
	} else if v, err := r.version(ctx, bin); err != nil {
		out = append(out, row("", "version", Fail, err.Error(), "reinstall "+h.binary, bin))
	} else {
		out = append(out, row("", "version", OK, v, "", bin))
	}
	if len(scopes) == 0 {
		return append(out, row("user", "installed", None, "no settings yet", "intercom install "+h.name, ""))
	}
	for _, s := range scopes {
		out = append(out, scopeRows(ctx, r, s.name, s.f, row)...)
	}
	return out
}

// scopeRows are the config, installed, hooks and mcp rows of one scope.
func scopeRows(ctx context.Context, r *runner, scope string, f finding, row func(scope, check, status, detail, fix, path string) schema.DoctorCheck) []schema.DoctorCheck {
	files := strings.Join(f.files, ", ")
	if len(f.broken) > 0 {
		return []schema.DoctorCheck{row(scope, "config", Fail, strings.Join(f.broken, "; "), "fix the syntax (the harness cannot read it either), or restore a backup (FILE.intercom-backup-*)", files)}
	}
	out := []schema.DoctorCheck{row(scope, "config", OK, "parses", "", files)}
	if !f.present {
		return append(out, row(scope, "installed", None, "intercom is not installed", f.fix, files))
	}
	var gone []string
	for _, p := range f.programs {
		if err := executable(p); err != nil {
			gone = append(gone, err.Error())
		}
	}
	switch {
	case len(gone) > 0:
		out = append(out, row(scope, "installed", Fail, "runs "+strings.Join(slices.Compact(gone), "; "), f.fix+" (points it at this intercom)", files))
	case len(f.missing) > 0:
		out = append(out, row(scope, "installed", Fail, "incomplete: no "+strings.Join(f.missing, ", "), f.fix, files))
	default:
		out = append(out, row(scope, "installed", OK, "intercom "+strings.Join(slices.Compact(f.programs), ", ")+oldHooks(f), "", files))
	}
	if f.hooks != nil {
		status, detail, fix := f.hooks(ctx, r)
		out = append(out, row(scope, "hooks", status, detail, fix, ""))
	}
	if f.mcp != nil {
		status, detail, fix := r.probeMCP(ctx, f.mcp)
		if fix == "" && status != OK {
			fix = f.fix
		}
		if status == OK && f.mcpApproval != nil {
			if s, d, fx := f.mcpApproval(ctx, r); s != OK {
				status, detail, fix = s, detail+"; but "+d, fx
			}
		}
		out = append(out, row(scope, "mcp", status, detail, fix, f.mcp.Command))
	}
	return out
}

// executable checks that path names a program that can run.
func executable(path string) error {
	if path == "" {
		return fmt.Errorf("no command")
	}
	fi, err := os.Stat(path)
	switch {
	case err != nil && os.IsNotExist(err):
		return fmt.Errorf("%s, which does not exist", path)
	case err != nil:
		return fmt.Errorf("%s: %w", path, err)
	case fi.IsDir() || fi.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("%s, which is not an executable file", path)
	}
	return nil
}

func samePath(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	if err1 != nil || err2 != nil {
		return filepath.Clean(a) == filepath.Clean(b)
	}
	return ra == rb
}

// scopeFlag is install's flag for a scope.
func scopeFlag(project bool) string {
	if project {
		return " --project"
	}
	return ""
}

// oldHooks is a note for hooks that run `intercom hook` while intercom-hook,
// the same hook in a cheaper process, sits beside that intercom (hooks an
// older release installed): installing again switches them.
func oldHooks(f finding) string {
	if f.hooks == nil || slices.ContainsFunc(f.programs, hookexe.Is) {
		return ""
	}
	for _, p := range f.programs {
		if _, ok := hookexe.Beside(p); ok {
			return "; the hooks run `intercom hook`: install again to run " + hookexe.Name + " beside it (a cheaper process)"
		}
	}
	return ""
}
