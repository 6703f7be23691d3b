package install

import (
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/intercom-dev/intercom/integrations/opencode"
	"github.com/intercom-dev/intercom/internal/bounded"
)

// Owned is what InspectOwned finds of an install that writes whole files
// (Pi's package, OpenCode's plugin), read back by install's own rules.
type Owned struct {
	Files   []string // the files install writes
	Present []string // those of Files that are there
	// Settings is the settings file install edits ("" for none: OpenCode);
	// SettingsErr says why it cannot be read or parsed.
	Settings       string
	SettingsExists bool
	SettingsErr    error
	// Registered: the settings name the files (Pi's "packages" holds the
	// package directory); true when there are no settings to edit.
	Registered bool
	// Command is the intercom binary the files run ("" when not found).
	Command string
	// Foreign is set when a file where install writes is not intercom's.
	Foreign error
}

// Any reports whether anything install writes is present.
func (o Owned) Any() bool {
	return len(o.Present) > 0 || (o.Settings != "" && o.Registered)
}

// Missing lists what install writes that is not there.
func (o Owned) Missing() []string {
	var out []string
	for _, f := range o.Files {
		if !contains(o.Present, f) {
			out = append(out, f)
		}
	}
	if !o.Registered {
		out = append(out, "the package in "+o.Settings+` "packages"`)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// InspectOwned reads what `intercom install pi` or `install opencode`
// writes for t (t.Harness pi or opencode).
func InspectOwned(t Target) Owned {
	o := Owned{Registered: true}
	switch t.Harness {
	case "pi":
		dir, _ := filepath.Abs(filepath.Join(t.AgentDir, PiPackageDir))
		plans, err := t.piPlans(true)
		o.Settings = filepath.Join(t.AgentDir, "settings.json")
		o.SettingsExists, _ = exists(o.Settings)
		if err != nil {
			o.SettingsErr = err
			return o
		}
		for _, p := range plans {
			if !p.Owned {
				continue
			}
			o.Files = append(o.Files, p.Path)
			if p.Before != nil {
				o.Present = append(o.Present, p.Path)
			}
			if filepath.Base(p.Path) == "intercom.json" && p.Before != nil {
				var rec struct{ Command string }
				if json.Unmarshal(p.Before, &rec) == nil {
					o.Command = rec.Command
				}
			}
		}
		_, doc, _ := read(o.Settings)
		list, _ := doc["packages"].([]any)
		o.Registered = false
		for _, p := range list {
			src, _ := p.(string)
			if m, ok := p.(map[string]any); ok {
				src, _ = m["source"].(string)
			}
			o.Registered = o.Registered || src == dir
		}
	case "opencode":
		path := t.openCodePluginFile()
		o.Files = []string{path}
		data, err := bounded.ReadFile(path, path, maxSettings)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			o.Foreign = err
		default:
			cmd, ours := opencode.Command(data)
			if !ours {
				o.Foreign = errors.New(path + " is not intercom's plugin")
				break
			}
			o.Present, o.Command = []string{path}, cmd
		}
	}
	return o
}
