package doctor

import (
	"path/filepath"

	"github.com/intercom-dev/intercom/internal/install"
)

// pi is Pi, read with install's rules: intercom's package in
// <agent dir>/intercom-package ($PI_CODING_AGENT_DIR, default ~/.pi/agent)
// and its path in the agent dir's settings.json "packages". Install pi
// has no project scope, so neither has doctor.
var pi = harness{name: "pi", binary: "pi", inspect: func(o *Options, project bool) (finding, bool) {
	if project {
		return finding{}, false
	}
	t := installTarget("pi", o, false)
	t.AgentDir = install.PiAgentDir(getenv(o.Env, "PI_CODING_AGENT_DIR"), o.Home)
	own := install.InspectOwned(t)
	f := ownedFinding("pi", own, false)
	return f, own.SettingsExists || len(own.Present) > 0
}}

// ownedFinding is what install.InspectOwned found, for a harness install
// writes whole files into (Pi, OpenCode).
func ownedFinding(name string, own install.Owned, project bool) finding {
	f := finding{present: own.Any(), fix: "intercom install " + name + scopeFlag(project)}
	if own.SettingsExists {
		f.files = append(f.files, own.Settings)
	}
	switch len(own.Present) {
	case 0:
	case 1:
		f.files = append(f.files, own.Present[0])
	default: // a package: its directory
		f.files = append(f.files, filepath.Dir(own.Present[0]))
	}
	if own.SettingsErr != nil {
		f.broken = append(f.broken, own.SettingsErr.Error())
	}
	if own.Foreign != nil {
		f.broken = append(f.broken, own.Foreign.Error())
	}
	if f.present {
		f.missing = own.Missing()
		f.programs = append(f.programs, own.Command)
	}
	return f
}
