package schema

// DoctorCheck is one row of doctor --json: one check of one harness (or of
// the broker) in one settings scope.
type DoctorCheck struct {
	Harness string `json:"harness"`         // claude, codex, gemini, pi, opencode; broker; intercom (its own config)
	Scope   string `json:"scope,omitempty"` // user or project: the settings checked
	Check   string `json:"check"`           // found, version, config, installed, hooks, mcp, broker
	Status  string `json:"status"`          // ok, warn, fail, or none (not found, not installed, not checked)
	Detail  string `json:"detail"`
	Fix     string `json:"fix,omitempty"` // what to do, when the status is not ok
	Path    string `json:"path,omitempty"`
}

// Doctor is doctor --json. OK is false when a check failed (doctor then
// exits 1).
type Doctor struct {
	OK     bool          `json:"ok"`
	Checks []DoctorCheck `json:"checks"`
}

// Find returns the check of harness in scope ("" for a harness-wide row).
func (d Doctor) Find(harness, scope, check string) (DoctorCheck, bool) {
	for _, c := range d.Checks {
		if c.Harness == harness && c.Scope == scope && c.Check == check {
			return c, true
		}
	}
	return DoctorCheck{}, false
}
