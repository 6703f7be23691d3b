package doctor

import (
	"path/filepath"
	"strings"

	"github.com/intercom-dev/intercom/internal/install"
)

// intercomEntry is what one harness's rule found of intercom in its
// settings.
type intercomEntry struct {
	present  bool
	mcp      *install.MCPServer
	programs []string // intercom binaries the entries run
}

// jsonFinding reads a harness's JSON settings files (those that exist)
// and applies its rule to them; found is false when none exists.
func jsonFinding(name string, project bool, paths []string, rule func(docs map[string]map[string]any) intercomEntry) (finding, bool) {
	f := finding{fix: "intercom install " + name + scopeFlag(project)}
	docs := map[string]map[string]any{}
	for _, p := range paths {
		s, ok := readJSONC(p)
		if !ok {
			continue
		}
		f.files = append(f.files, p)
		if s.err != nil {
			f.broken = append(f.broken, s.err.Error())
			continue
		}
		docs[p] = s.doc
	}
	e := rule(docs)
	f.present, f.mcp, f.programs = e.present, e.mcp, e.programs
	if f.mcp != nil && filepath.IsAbs(f.mcp.Command) {
		f.programs = append(f.programs, f.mcp.Command)
	}
	return f, len(f.files) > 0
}

// intercomHookPrograms are the programs of the hooks in a Claude-Code-shaped
// hooks map ({"hooks":{EVENT:[{"hooks":[{"command":…}]}]}}) that run
// `intercom hook HARNESS …`.
func intercomHookPrograms(doc map[string]any, harness string) []string {
	var out []string
	hooksMap, _ := doc["hooks"].(map[string]any)
	for _, groups := range hooksMap {
		list, _ := groups.([]any)
		for _, g := range list {
			gm, _ := g.(map[string]any)
			hs, _ := gm["hooks"].([]any)
			for _, h := range hs {
				hm, _ := h.(map[string]any)
				if cmd, _ := hm["command"].(string); strings.Contains(cmd, "intercom") && strings.Contains(cmd, " hook "+harness) {
					out = append(out, install.HookBinary(cmd))
				}
			}
		}
	}
	return out
}

// mentionsIntercom reports whether a settings list (of paths, package
// names or objects with one) names intercom.
func mentionsIntercom(v any) bool {
	list, _ := v.([]any)
	for _, x := range list {
		switch x := x.(type) {
		case string:
			if strings.Contains(strings.ToLower(x), "intercom") {
				return true
			}
		case map[string]any:
			for _, k := range []string{"source", "path", "name", "package"} {
				if s, _ := x[k].(string); strings.Contains(strings.ToLower(s), "intercom") {
					return true
				}
			}
		}
	}
	return false
}

// intercomFileIn reports whether dir holds a file or directory whose name
// contains "intercom" (an extension or plugin).
func intercomFileIn(dir string) (string, bool) {
	matches, _ := filepath.Glob(filepath.Join(dir, "*intercom*"))
	if len(matches) == 0 {
		return "", false
	}
	return matches[0], true
}
