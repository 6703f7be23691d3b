package runs

import (
	"strconv"
	"strings"

	"github.com/intercom-dev/intercom/internal/runenv"
)

// The run's variables, its Child and ChildFromEnv live in package runenv
// (which the hook executable links without the rest of runs).
const (
	EnvSupervisor = runenv.EnvSupervisor
	EnvRunID      = runenv.EnvRunID
	EnvAgent      = runenv.EnvAgent
	EnvIndex      = runenv.EnvIndex
)

// ChildVars are the variables that make a process a supervised child.
var ChildVars = runenv.ChildVars

// Child is what agent-runs tells a child about its run.
type Child = runenv.Child

// ErrNotChild: the process is not inside a supervised run.
var ErrNotChild = runenv.ErrNotChild

// ChildFromEnv reads the child's run from getenv (runenv.ChildFromEnv).
func ChildFromEnv(getenv func(string) string) (Child, error) { return runenv.ChildFromEnv(getenv) }

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
		vars[k], vars[runenv.PiName(k)] = v, v
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
