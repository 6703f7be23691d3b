package doctor

import (
	"path/filepath"

	"github.com/intercom-dev/intercom/internal/install"
)

// opencode is OpenCode: opencode.json or opencode.jsonc (comments allowed)
// in $XDG_CONFIG_HOME/opencode (default ~/.config/opencode), or the file
// $OPENCODE_CONFIG; a project's in its root and .opencode/; plugins in
// plugin/ (or plugins/) beside them.
var opencode = harness{name: "opencode", binary: "opencode", inspect: func(o *Options, project bool) (finding, bool) {
	var dirs, paths []string // config directories; config files
	if project {
		dirs = []string{filepath.Join(o.Dir, ".opencode")}
		paths = []string{filepath.Join(o.Dir, "opencode.json"), filepath.Join(o.Dir, "opencode.jsonc")}
	} else {
		base := getenv(o.Env, "XDG_CONFIG_HOME")
		if base == "" {
			base = filepath.Join(o.Home, ".config")
		}
		dirs = []string{filepath.Join(base, "opencode")}
		if d := getenv(o.Env, "OPENCODE_CONFIG_DIR"); d != "" {
			dirs = append(dirs, d)
		}
		if c := getenv(o.Env, "OPENCODE_CONFIG"); c != "" {
			paths = append(paths, c)
		}
	}
	for _, d := range dirs {
		paths = append(paths, filepath.Join(d, "opencode.json"), filepath.Join(d, "opencode.jsonc"))
	}
	f, found := jsonFinding("opencode", project, paths, func(docs map[string]map[string]any) intercomEntry {
		return opencodeIntercom(dirs, docs)
	})
	if p, ok := opencodePlugin(dirs); ok && !found {
		f.files, f.present, found = []string{p}, true, true
	}
	return f, found
}}

// opencodePlugin is a plugin file named *intercom* in a config directory.
func opencodePlugin(dirs []string) (string, bool) {
	for _, d := range dirs {
		for _, sub := range []string{"plugin", "plugins"} {
			if p, ok := intercomFileIn(filepath.Join(d, sub)); ok {
				return p, true
			}
		}
	}
	return "", false
}

// opencodeIntercom is the rule for "intercom is installed in OpenCode": an
// "intercom" local server in mcp ({"type":"local","command":[…],
// "environment":{…}}), a "plugin" entry naming intercom, or a plugin file
// named *intercom* in a config directory's plugin/ or plugins/. Adjust it
// to what `intercom install opencode` writes.
func opencodeIntercom(dirs []string, docs map[string]map[string]any) intercomEntry {
	var e intercomEntry
	for _, doc := range docs {
		servers, _ := doc["mcp"].(map[string]any)
		if m, ok := servers["intercom"].(map[string]any); ok {
			argv, _ := m["command"].([]any)
			entry := map[string]any{"env": m["environment"]}
			if len(argv) > 0 {
				entry["command"], entry["args"] = argv[0], argv[1:]
			}
			e.mcp = install.DecodeMCPServer(entry)
		}
		e.present = e.present || mentionsIntercom(doc["plugin"])
	}
	_, plugin := opencodePlugin(dirs)
	e.present = e.present || plugin || e.mcp != nil
	return e
}
