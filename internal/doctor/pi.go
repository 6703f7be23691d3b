package doctor

import (
	"path/filepath"

	"github.com/intercom-dev/intercom/internal/install"
)

// pi is Pi: its agent directory is $PI_CODING_AGENT_DIR (default
// ~/.pi/agent), with settings.json, mcp.json (Pi 1.x's built-in MCP) and
// extensions/; a project has the same under <project>/.pi/.
var pi = harness{name: "pi", binary: "pi", inspect: func(o *Options, project bool) (finding, bool) {
	dir := getenv(o.Env, "PI_CODING_AGENT_DIR")
	if dir == "" {
		dir = filepath.Join(o.Home, ".pi", "agent")
	}
	if project {
		dir = filepath.Join(o.Dir, ".pi")
	}
	settings, mcpFile := filepath.Join(dir, "settings.json"), filepath.Join(dir, "mcp.json")
	f, found := jsonFinding("pi", project, []string{settings, mcpFile}, func(docs map[string]map[string]any) intercomEntry {
		return piIntercom(dir, docs[settings], docs[mcpFile])
	})
	if !found {
		if ext, ok := intercomFileIn(filepath.Join(dir, "extensions")); ok {
			f.files, f.present, found = []string{ext}, true, true
		}
	}
	return f, found
}}

// piIntercom is the rule for "intercom is installed in Pi": an extension
// named *intercom* in the agent directory's extensions/, an "extensions"
// or "packages" entry naming intercom in settings.json, or an "intercom"
// server in mcp.json. Adjust it to what `intercom install pi` writes.
func piIntercom(agentDir string, settings, mcp map[string]any) intercomEntry {
	var e intercomEntry
	servers, _ := mcp["mcpServers"].(map[string]any)
	e.mcp = install.DecodeMCPServer(servers["intercom"])
	_, ext := intercomFileIn(filepath.Join(agentDir, "extensions"))
	e.present = ext || mentionsIntercom(settings["extensions"]) || mentionsIntercom(settings["packages"]) || e.mcp != nil
	return e
}
