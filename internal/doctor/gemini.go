package doctor

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/intercom-dev/intercom/internal/hooks"
	"github.com/intercom-dev/intercom/internal/install"
)

// gemini is Gemini CLI: hooks and the MCP server in one settings.json,
// $GEMINI_CLI_HOME/.gemini/ (default the home's) or the project's
// .gemini/; comments allowed, as Gemini allows them. Read with install's
// rules (install.InspectSettings).
var gemini = harness{name: "gemini", binary: "gemini", inspect: func(o *Options, project bool) (finding, bool) {
	t := installTarget("gemini", o, project)
	t.GeminiHome = getenv(o.Env, "GEMINI_CLI_HOME")
	settings, _ := t.Files()
	var in install.Installed
	f, found := jsonFinding("gemini", project, []string{settings}, func(docs map[string]map[string]any) intercomEntry {
		doc, ok := docs[settings]
		if !ok {
			return intercomEntry{}
		}
		in = install.InspectSettings(t, doc)
		g := installedFinding("gemini", in, project)
		if g.mcp != nil { // Gemini expands $VAR and ${VAR} in env from its own environment (unset: "")
			for k, v := range g.mcp.Env {
				g.mcp.Env[k] = os.Expand(v, func(name string) string { return getenv(o.Env, name) })
			}
		}
		return intercomEntry{present: g.present, mcp: g.mcp, programs: g.programs, missing: g.missing}
	})
	f.hooks = func(context.Context, *runner) (string, string, string) {
		if missing := in.MissingHooks(); len(missing) > 0 {
			return Fail, "missing: " + strings.Join(geminiNames(missing), ", "), f.fix
		}
		if len(in.PreTool) == 0 { // an install older than reservations' enforcement
			return Warn, "no " + install.GeminiBeforeTool + " hook: reservations are not enforced before an edit (only at commit)", f.fix
		}
		return OK, fmt.Sprintf("%s, %s (user hooks run without a prompt)", strings.Join(geminiNames(installedEvents(in)), ", "), install.GeminiBeforeTool), ""
	}
	return f, found
}}

// geminiNames are Gemini CLI's names of hook events of hooks.Events.
func geminiNames(events []string) []string {
	names := hooks.HarnessEvents("gemini")
	var out []string
	for _, ev := range events {
		for i, canonical := range hooks.Events {
			if canonical == ev {
				out = append(out, names[i])
			}
		}
	}
	return out
}
