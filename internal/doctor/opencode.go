package doctor

import (
	"path/filepath"

	"github.com/intercom-dev/intercom/internal/install"
)

// opencode is OpenCode: intercom's plugin, read with install's rules, in
// plugin/ of its config directory ($OPENCODE_CONFIG_DIR, else
// $XDG_CONFIG_HOME/opencode, else ~/.config/opencode; a project's
// .opencode/). Its opencode.json or opencode.jsonc (comments allowed)
// there, $OPENCODE_CONFIG, and a project's in its root must parse.
var opencode = harness{name: "opencode", binary: "opencode", inspect: func(o *Options, project bool) (finding, bool) {
	t := installTarget("opencode", o, project)
	t.ConfigDir = install.OpenCodeDir(func(k string) string { return getenv(o.Env, k) }, o.Home)
	dirs := []string{t.ConfigDir}
	var paths []string
	if project {
		dirs = []string{filepath.Join(o.Dir, ".opencode")}
		paths = []string{filepath.Join(o.Dir, "opencode.json"), filepath.Join(o.Dir, "opencode.jsonc")}
	} else if c := getenv(o.Env, "OPENCODE_CONFIG"); c != "" {
		paths = append(paths, c)
	}
	for _, d := range dirs {
		paths = append(paths, filepath.Join(d, "opencode.json"), filepath.Join(d, "opencode.jsonc"))
	}
	config, found := jsonFinding("opencode", project, paths, func(map[string]map[string]any) intercomEntry { return intercomEntry{} })
	own := install.InspectOwned(t)
	f := ownedFinding("opencode", own, project)
	f.files = append(config.files, f.files...)
	f.broken = append(config.broken, f.broken...)
	return f, found || len(own.Present) > 0 || own.Foreign != nil
}}
