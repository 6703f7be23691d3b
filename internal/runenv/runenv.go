// Package runenv is what a supervised child learns of its run from its
// environment: the variables agent-runs sets (with pi-intercom's
// PI_SUBAGENT_* names read when ours are not set) and the run ids they
// carry. It is a leaf package so that the hook executable, which reads the
// supervisor of the agent it runs for, links nothing of package runs.
package runenv

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/intercom-dev/intercom/internal/ascii"
)

// The variables that tell a child about its run (ChildEnv sets them,
// ChildFromEnv reads them), each with pi-intercom's PI_SUBAGENT_* name,
// read when ours is not set.
const (
	EnvSupervisor = "INTERCOM_SUPERVISOR"
	EnvRunID      = "INTERCOM_RUN_ID"
	EnvAgent      = "INTERCOM_CHILD_AGENT"
	EnvIndex      = "INTERCOM_CHILD_INDEX"
)

// ChildVars are the variables that make a process a supervised child.
var ChildVars = []string{EnvSupervisor, EnvRunID, EnvAgent, EnvIndex}

var piNames = map[string]string{
	EnvSupervisor: "PI_SUBAGENT_ORCHESTRATOR_TARGET",
	EnvRunID:      "PI_SUBAGENT_RUN_ID",
	EnvAgent:      "PI_SUBAGENT_CHILD_AGENT",
	EnvIndex:      "PI_SUBAGENT_CHILD_INDEX",
}

// PiName is pi-intercom's name of one of ChildVars ("" for another).
func PiName(ours string) string { return piNames[ours] }

// Child is what agent-runs tells a child about its run.
type Child struct {
	Supervisor string // the supervisor's session (id or target)
	RunID      string
	Agent      string
	Index      int
}

// ErrNotChild: the process is not inside a supervised run (one of
// ChildVars is not set).
var ErrNotChild = errors.New("contact-supervisor is only available inside a supervised run: INTERCOM_SUPERVISOR, INTERCOM_RUN_ID, INTERCOM_CHILD_AGENT and INTERCOM_CHILD_INDEX must all be set (agent-runs start sets them)")

// ChildFromEnv reads the child's run from getenv (os.Getenv). Outside a
// run it returns ErrNotChild; a set but malformed index or run id is
// another error.
func ChildFromEnv(getenv func(string) string) (Child, error) {
	get := func(ours string) string {
		if v := getenv(ours); v != "" {
			return v
		}
		return getenv(piNames[ours])
	}
	ch := Child{Supervisor: get(EnvSupervisor), RunID: get(EnvRunID), Agent: get(EnvAgent)}
	idx := get(EnvIndex)
	if ch.Supervisor == "" || ch.RunID == "" || ch.Agent == "" || idx == "" {
		return ch, ErrNotChild
	}
	n, err := strconv.Atoi(idx)
	if err != nil || n < 0 {
		return ch, fmt.Errorf("%s must be a non-negative integer, got %q", EnvIndex, idx)
	}
	ch.Index = n
	if err := ValidID(ch.RunID); err != nil {
		return ch, fmt.Errorf("%s: %w", EnvRunID, err)
	}
	return ch, nil
}

var idFirst, idRest = ascii.Of("a-z0-9"), ascii.Of("a-z0-9_-")

// ValidID checks a run id or question id: 1-64 of a-z 0-9 _ -, starting
// with a letter or digit.
func ValidID(id string) error {
	if !ascii.Word(id, 1, 64, idFirst, idRest) {
		return fmt.Errorf("invalid id %q", id)
	}
	return nil
}
