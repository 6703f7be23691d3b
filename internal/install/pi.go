package install

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	pipkg "github.com/intercom-dev/intercom/integrations/pi"
)

// PiPackageDir is the directory, inside the Pi agent dir, that holds
// intercom's Pi package.
const PiPackageDir = "intercom-package"

// PiAgentDir is Pi's agent directory: PI_CODING_AGENT_DIR (env), else
// ~/.pi/agent.
func PiAgentDir(env, home string) string {
	if env != "" {
		return env
	}
	return filepath.Join(home, ".pi", "agent")
}

// piPlans installs (or removes) intercom's Pi package: its files under
// <agent dir>/intercom-package (with intercom.json naming this binary) and
// the package's path in <agent dir>/settings.json "packages", the list
// `pi install <path>` writes.
func (t Target) piPlans(add bool) ([]Plan, error) {
	if t.AgentDir == "" {
		return nil, fmt.Errorf("pi: no agent directory")
	}
	dir, err := filepath.Abs(filepath.Join(t.AgentDir, PiPackageDir))
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for _, name := range pipkg.Names {
		data, err := fs.ReadFile(pipkg.Files, name)
		if err != nil {
			return nil, err
		}
		files[name] = data
	}
	cmd, err := json.MarshalIndent(map[string]string{"command": t.Command}, "", "  ")
	if err != nil {
		return nil, err
	}
	files["intercom.json"] = append(cmd, '\n')
	var out []Plan
	for _, name := range append(append([]string(nil), pipkg.Names...), "intercom.json") {
		path := filepath.Join(dir, name)
		before, err := os.ReadFile(path)
		if err != nil && !os.IsNotExist(err) {
			return nil, err
		}
		p := Plan{Path: path, Before: before, Owned: true}
		if add {
			p.After = files[name]
		}
		out = append(out, p)
	}
	settings := filepath.Join(t.AgentDir, "settings.json")
	before, doc, err := read(settings)
	if err != nil {
		return nil, err
	}
	editPackages(doc, dir, add)
	after := encode(doc)
	if len(doc) == 0 && (before == nil || !add) {
		after = nil
	}
	return append(out, Plan{Path: settings, Before: before, After: keepIfSame(before, after)}), nil
}

// editPackages adds dir to (or removes it from) a Pi settings document's
// "packages": a string source, or an object whose "source" it is.
func editPackages(doc map[string]any, dir string, add bool) {
	list, _ := doc["packages"].([]any)
	var kept []any
	for _, p := range list {
		src, _ := p.(string)
		if m, ok := p.(map[string]any); ok {
			src, _ = m["source"].(string)
		}
		if src == dir {
			continue
		}
		kept = append(kept, p)
	}
	if add {
		kept = append(kept, dir)
	}
	if len(kept) == 0 {
		delete(doc, "packages")
	} else {
		doc["packages"] = kept
	}
}
