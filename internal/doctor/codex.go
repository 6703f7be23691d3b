package doctor

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/intercom-dev/intercom/internal/codexapp"
	"github.com/intercom-dev/intercom/internal/install"
)

// codex is Codex: read with install's rules (hooks in .codex/hooks.json,
// [features] hooks and [mcp_servers.intercom] in .codex/config.toml). Its
// hooks run only once the user trusted them, which Codex itself reports
// (codexHookTrust).
var codex = harness{name: "codex", binary: "codex", inspect: func(o *Options, project bool) (finding, bool) {
	t := installTarget("codex", o, project)
	in := install.Inspect(t)
	f := installedFinding("codex", in, project)
	f.hooks = func(ctx context.Context, r *runner) (string, string, string) {
		switch {
		case in.HooksFeature != nil && !*in.HooksFeature:
			return Fail, "hooks feature off: [features] hooks = false in " + in.MCPFile + " (Codex runs no hooks)", f.fix + " (sets hooks = true)"
		case in.HooksFeature == nil && (in.LegacyHooksFeature == nil || !*in.LegacyHooksFeature):
			return Fail, "hooks feature off: no [features] hooks = true in " + in.MCPFile + " (Codex runs no hooks)", f.fix + " (sets hooks = true)"
		case len(in.MissingHooks()) > 0:
			return Fail, "missing: " + strings.Join(missingHooks(in, false), ", "), f.fix
		}
		bin := r.lookPath("codex")
		if bin == "" {
			return Warn, "hooks enabled; trust not checked (codex is not on PATH)", ""
		}
		r.trustOnce.Do(func() { r.trust, r.trustErr = r.codexHookTrust(ctx, bin) })
		hooks, err := r.trust, r.trustErr
		if err != nil {
			return Warn, "hooks enabled; trust not checked: " + err.Error(), "check them in codex with /hooks"
		}
		var untrusted []string
		n := 0
		for _, h := range inScope(hooks, in.HooksFile) {
			if !t.Ours(h.Command) {
				continue
			}
			n++
			if h.TrustStatus != "trusted" {
				untrusted = append(untrusted, h.EventName+" "+h.TrustStatus)
			}
		}
		switch {
		case n == 0 && project:
			return Fail, "Codex lists no intercom hook from " + in.HooksFile + ": it reads a project's .codex/ only in a trusted project",
				`trust the project: start codex in ` + o.Dir + ` and accept it, or add [projects."` + o.Dir + `"] trust_level = "trusted" to ~/.codex/config.toml`
		case n == 0:
			return Fail, "hooks enabled, but Codex lists no intercom hook from " + in.HooksFile, f.fix
		case len(untrusted) > 0:
			return Fail, fmt.Sprintf("%d of %d intercom hooks not trusted (Codex skips them silently): %s", len(untrusted), n, strings.Join(untrusted, ", ")),
				`start codex and choose "Trust all and continue" at "Hooks need review" (or review them with /hooks)`
		}
		return OK, fmt.Sprintf("hooks feature on; %d intercom hooks trusted", n), ""
	}
	return f, in.HooksExists || in.MCPExists
}}

// inScope are the hooks Codex read from hooksFile: its keys are
// "FILE:event:group:index"; when they name no file (another Codex
// version), all of them.
func inScope(hooks []codexapp.Hook, hooksFile string) []codexapp.Hook {
	var out []codexapp.Hook
	named := false
	for _, h := range hooks {
		named = named || strings.HasPrefix(h.Key, "/")
		if strings.HasPrefix(h.Key, hooksFile+":") {
			out = append(out, h)
		}
	}
	if !named {
		return hooks
	}
	return out
}

// codexHookTrust asks Codex which hooks it would run in the project
// directory (or home) and their trust, through `codex app-server` (the API
// of Codex's own /hooks screen).
func (r *runner) codexHookTrust(ctx context.Context, bin string) ([]codexapp.Hook, error) {
	ctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	s, err := codexapp.Start(r.command(ctx, bin, []string{"app-server"}, nil), "intercom-doctor", r.o.Version)
	if err != nil {
		return nil, timedOut(ctx, err, r.o.Timeout)
	}
	defer func() { _ = s.Close() }()
	defer cancel() // first: stop it rather than wait for it to see EOF
	dir := r.o.Dir
	if dir == "" {
		dir = r.o.Home
	}
	hooks, err := s.Hooks(dir)
	return hooks, timedOut(ctx, err, r.o.Timeout)
}

// timedOut says so when ctx ended err.
func timedOut(ctx context.Context, err error, after time.Duration) error {
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("no answer in %s", after)
	}
	return err
}
