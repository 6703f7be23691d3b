package doctor

import (
	"path/filepath"

	"github.com/intercom-dev/intercom/internal/install"
)

// gemini is Gemini CLI: settings in $GEMINI_CLI_HOME/.gemini/settings.json
// (GEMINI_CLI_HOME defaults to the home directory) and
// <project>/.gemini/settings.json; comments allowed.
var gemini = harness{name: "gemini", binary: "gemini", inspect: func(o *Options, project bool) (finding, bool) {
	base := getenv(o.Env, "GEMINI_CLI_HOME")
	if base == "" {
		base = o.Home
	}
	if project {
		base = o.Dir
	}
	return jsonFinding("gemini", project, []string{filepath.Join(base, ".gemini", "settings.json")}, geminiIntercom)
}}

// geminiIntercom is the rule for "intercom is installed in Gemini CLI":
// an "intercom" server in mcpServers, or a hook running `intercom hook
// gemini`. Adjust it to what `intercom install gemini` writes.
func geminiIntercom(docs map[string]map[string]any) intercomEntry {
	var e intercomEntry
	for _, doc := range docs {
		servers, _ := doc["mcpServers"].(map[string]any)
		if s := install.DecodeMCPServer(servers["intercom"]); s != nil {
			e.mcp = s
		}
		e.programs = append(e.programs, intercomHookPrograms(doc, "gemini")...)
	}
	e.present = e.mcp != nil || len(e.programs) > 0
	return e
}
