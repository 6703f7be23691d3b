package runs

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
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

// ChildEnv returns the environment a child is started with: the saved
// launch environment plus the supervision variables (ours and the
// PI_SUBAGENT_* equivalents).
func ChildEnv(r *Run, home string) []string {
	drop := map[string]bool{}
	vars := map[string]string{
		"INTERCOM_HOME":          home,
		"INTERCOM_SESSION":       r.ChildSessionID,
		"INTERCOM_CHILD_SESSION": r.ChildSession,
	}
	for k, v := range map[string]string{EnvSupervisor: r.Supervisor, EnvRunID: r.ID, EnvAgent: r.Agent, EnvIndex: strconv.Itoa(r.Index)} {
		vars[k], vars[piNames[k]] = v, v
	}
	if r.AnswerFile != "" {
		vars["INTERCOM_ANSWER_FILE"] = r.AnswerFile
	}
	for k := range vars {
		drop[k] = true
	}
	drop["INTERCOM_ANSWER_FILE"] = true
	drop[EnvHandoff] = true
	drop["INTERCOM_SOCKET"] = false
	var env []string
	for _, kv := range r.Env {
		k, _, _ := strings.Cut(kv, "=")
		if !drop[k] {
			env = append(env, kv)
		}
	}
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	return env
}

// EnvKeys lists the keys of an environment.
func EnvKeys(env []string) []string {
	keys := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		keys = append(keys, k)
	}
	return keys
}

// EnvHandoff names the hand-off note of a child restarted by the
// --on-stuck ladder (stall.go).
const EnvHandoff = "INTERCOM_HANDOFF_FILE"
