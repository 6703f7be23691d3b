package install

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/intercom-dev/intercom/integrations/opencode"
	"github.com/intercom-dev/intercom/internal/bounded"
)

// OpenCodeDir is OpenCode's user config directory: OPENCODE_CONFIG_DIR when
// set, else $XDG_CONFIG_HOME/opencode, else ~/.config/opencode.
func OpenCodeDir(getenv func(string) string, home string) string {
	if d := getenv("OPENCODE_CONFIG_DIR"); d != "" {
		return d
	}
	if x := getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "opencode")
	}
	return filepath.Join(home, ".config", "opencode")
}

// openCodePluginFile is where the plugin goes: OpenCode loads every .ts and
// .js file in plugin/ of its config directories (the user's, or the
// project's .opencode/) with no trust prompt.
func (t Target) openCodePluginFile() string {
	dir := t.ConfigDir
	switch {
	case t.Project != "":
		dir = filepath.Join(t.Project, ".opencode")
	case dir == "":
		dir = filepath.Join(t.Home, ".config", "opencode")
	}
	return filepath.Join(dir, "plugin", "intercom.ts")
}

// openCodePlans writes (or removes) the plugin file. It carries the intercom
// tool itself (a plugin tool knows its session; OpenCode's one MCP server
// per process does not), so no MCP entry is added.
func (t Target) openCodePlans(add bool) ([]Plan, error) {
	path := t.openCodePluginFile()
	before, err := bounded.ReadFile(path, path, maxSettings)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		before = nil
	case err != nil:
		return nil, err
	}
	ours := before != nil && bytes.Contains(before, []byte(opencode.Marker))
	if before != nil && !ours && add {
		return nil, fmt.Errorf("%s exists and was not written by intercom: move it away first", path)
	}
	p := Plan{Path: path, Before: before, After: before, Owned: true}
	switch {
	case add:
		p.After = opencode.Plugin(t.Command)
	case ours:
		p.After = nil
	}
	return []Plan{p}, nil
}
