package doctor

import (
	"github.com/intercom-dev/intercom/internal/install"
)

// intercomEntry is what one harness's rule found of intercom in its
// settings.
type intercomEntry struct {
	present  bool
	mcp      *install.MCPServer
	programs []string // intercom binaries the entries run
	missing  []string // what install writes that is not there
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
	f.present, f.mcp, f.programs, f.missing = e.present, e.mcp, e.programs, e.missing
	return f, len(f.files) > 0
}
