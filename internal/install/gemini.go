package install

import (
	"path/filepath"
	"time"
)

// GeminiHookTimeout bounds each intercom hook Gemini CLI runs (its hook
// timeouts are in milliseconds; the default is 60000).
const GeminiHookTimeout = 30 * time.Second

// holds reports whether Gemini's hook for event waits for a waking message
// (install --hold): AfterAgent, the only hook an idle session runs.
func (t Target) holds(event string) bool {
	return t.Harness == "gemini" && t.GeminiHold > 0 && event == "AfterAgent"
}

// geminiSettings is Gemini CLI's settings file: <project>/.gemini/ for a
// project, else .gemini/ under GEMINI_CLI_HOME, else under the home.
func (t Target) geminiSettings() string {
	root := t.Home
	switch {
	case t.Project != "":
		root = t.Project
	case t.GeminiHome != "":
		root = t.GeminiHome
	}
	return filepath.Join(root, ".gemini", "settings.json")
}

// mcpEntry is the intercom MCP server install writes in a JSON settings file.
func (t Target) mcpEntry() map[string]any {
	if t.Harness != "gemini" {
		return map[string]any{"command": t.Command, "args": []any{"mcp", "--harness", t.Harness}}
	}
	// Gemini CLI passes MCP servers its environment minus credential-like
	// variables, and in strict mode (under GitHub Actions) minus nearly all:
	// variables named in "env" always pass ($VAR expands, unset is empty).
	env := map[string]any{}
	for _, v := range CodexEnvVars {
		env[v] = "$" + v
	}
	// trust: Gemini CLI asks before every call of an untrusted server's tools.
	return map[string]any{"command": t.Command, "args": []any{"mcp", "--harness", "gemini"}, "env": env, "trust": true}
}

// geminiPlans is install (add) or uninstall (!add) for Gemini CLI: hooks
// and MCP server live in one settings.json.
func (t Target) geminiPlans(add bool) ([]Plan, error) {
	path := t.geminiSettings()
	before, doc, err := read(path)
	if err != nil {
		return nil, err
	}
	t.editHooks(doc, add)
	t.editMCPJSON(doc, add)
	after := encode(doc)
	if len(doc) == 0 && (before == nil || !add) {
		after = nil // nothing left but what we added: remove the file
	}
	return []Plan{{Path: path, Before: before, After: keepIfSame(before, after)}}, nil
}
