package doctor

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

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
		case in.MCPErr != nil:
			return Fail, "config.toml unreadable", ""
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
func inScope(hooks []codexHook, hooksFile string) []codexHook {
	var out []codexHook
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

// codexHook is one hook as `codex app-server`'s hooks/list reports it.
type codexHook struct {
	Key         string `json:"key"`
	Command     string `json:"command"`
	EventName   string `json:"eventName"`
	TrustStatus string `json:"trustStatus"` // trusted, untrusted, modified, ...
}

// codexHookTrust asks Codex which hooks it would run in the project
// directory (or home) and their trust, through `codex app-server` (JSON-RPC
// lines on stdio: initialize, initialized, hooks/list), the API of Codex's
// own /hooks screen.
func (r *runner) codexHookTrust(ctx context.Context, bin string) ([]codexHook, error) {
	ctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	c := r.command(ctx, bin, []string{"app-server"}, nil)
	in, err := c.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := c.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr tailBuffer
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		return nil, err
	}
	defer func() { _ = in.Close(); cancel(); _ = c.Wait() }()
	lines := bufio.NewScanner(out)
	lines.Buffer(make([]byte, 0, 1<<16), 16<<20)
	send := func(msg map[string]any) error {
		data, _ := json.Marshal(msg)
		_, err := in.Write(append(data, '\n'))
		return err
	}
	call := func(id int, method string, params any) (json.RawMessage, error) {
		if err := send(map[string]any{"id": id, "method": method, "params": params}); err != nil {
			return nil, err
		}
		for lines.Scan() {
			var msg struct {
				ID     json.RawMessage `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if json.Unmarshal(lines.Bytes(), &msg) != nil || string(msg.ID) != strconv.Itoa(id) {
				continue // a notification
			}
			if len(msg.Error) > 0 {
				return nil, fmt.Errorf("codex app-server %s: %s", method, msg.Error)
			}
			return msg.Result, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("codex app-server %s: no answer in %s", method, r.o.Timeout)
		}
		return nil, fmt.Errorf("codex app-server %s: no answer (%s)", method, stderr.lastLine())
	}
	if _, err := call(1, "initialize", map[string]any{"clientInfo": map[string]any{"name": "intercom-doctor", "version": r.o.Version}}); err != nil {
		return nil, err
	}
	if err := send(map[string]any{"method": "initialized"}); err != nil {
		return nil, err
	}
	dir := r.o.Dir
	if dir == "" {
		dir = r.o.Home
	}
	raw, err := call(2, "hooks/list", map[string]any{"cwds": []string{dir}})
	if err != nil {
		return nil, err
	}
	var res struct {
		Data []struct {
			Hooks []codexHook `json:"hooks"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || len(res.Data) == 0 {
		return nil, fmt.Errorf("codex app-server hooks/list: unexpected answer %.200s", raw)
	}
	return res.Data[0].Hooks, nil
}
