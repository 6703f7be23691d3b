package config

import (
	"fmt"
	"time"

	"github.com/intercom-dev/intercom/internal/duration"
)

// The variables that override the stall thresholds of config.json (tests
// use small ones), each a duration such as 500ms or 5m.
const (
	EnvStuckAfter       = "INTERCOM_STUCK_AFTER"
	EnvStuckSteersAfter = "INTERCOM_STUCK_STEERS_AFTER"
	EnvStuckStepAfter   = "INTERCOM_STUCK_STEP_AFTER"
)

// Stuck are the thresholds of a stall. A session is stuck when it has
// reported the same busy state for BusyAfter with no boundary, or has left
// a steer waiting for SteersAfter (0 turns either rule off). StepAfter is
// the time between the steps of agent-runs' --on-stuck ladder.
type Stuck struct {
	BusyAfter   time.Duration
	SteersAfter time.Duration
	StepAfter   time.Duration
}

// Stuck returns the stall thresholds of c with the environment's
// overrides (getenv is os.Getenv); a malformed override is an error naming
// the variable.
func (c Config) Stuck(getenv func(string) string) (Stuck, error) {
	s := Stuck{
		BusyAfter:   time.Duration(c.StuckAfterMs) * time.Millisecond,
		SteersAfter: time.Duration(c.StuckSteersAfterMs) * time.Millisecond,
		StepAfter:   time.Duration(c.StuckStepAfterMs) * time.Millisecond,
	}
	for _, o := range []struct {
		name string
		to   *time.Duration
	}{{EnvStuckAfter, &s.BusyAfter}, {EnvStuckSteersAfter, &s.SteersAfter}, {EnvStuckStepAfter, &s.StepAfter}} {
		v := getenv(o.name)
		if v == "" {
			continue
		}
		d, err := duration.Parse(v, "off")
		if err != nil {
			return Stuck{}, fmt.Errorf("%s: %w", o.name, err)
		}
		*o.to = d
	}
	return s, nil
}

func init() { // the keys of config.json that set Stuck
	known["stuckAfterMs"] = msField(func(c *Config) *int64 { return &c.StuckAfterMs }, "never stuck for being busy")
	known["stuckSteersAfterMs"] = msField(func(c *Config) *int64 { return &c.StuckSteersAfterMs }, "never stuck for waiting steers")
	known["stuckStepAfterMs"] = msField(func(c *Config) *int64 { return &c.StuckStepAfterMs }, "every step at once")
}
