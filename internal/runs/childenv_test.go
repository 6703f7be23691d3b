package runs

import (
	"errors"
	"strings"
	"testing"
)

func TestChildEnv(t *testing.T) {
	t.Parallel()
	r := &Run{ID: "r1", Agent: "worker", Index: 2, Supervisor: "sup-id", ChildSession: "subagent-worker-r1-3", ChildSessionID: "child-r1",
		Env: []string{"PATH=/bin", "INTERCOM_SESSION=the-supervisor", "INTERCOM_ANSWER_FILE=/stale", "INTERCOM_RUN_ID=old", "KEEP=1", "INTERCOM_SOCKET=/s"}}
	envMap := func(env []string) map[string][]string {
		m := map[string][]string{}
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			m[k] = append(m[k], v)
		}
		return m
	}
	m := envMap(ChildEnv(r, "/home/x"))
	want := map[string]string{
		"PATH": "/bin", "KEEP": "1", "INTERCOM_SOCKET": "/s", "INTERCOM_HOME": "/home/x",
		"INTERCOM_SUPERVISOR": "sup-id", "INTERCOM_RUN_ID": "r1", "INTERCOM_CHILD_AGENT": "worker", "INTERCOM_CHILD_INDEX": "2",
		"INTERCOM_SESSION": "child-r1", "INTERCOM_CHILD_SESSION": "subagent-worker-r1-3",
		"PI_SUBAGENT_ORCHESTRATOR_TARGET": "sup-id", "PI_SUBAGENT_RUN_ID": "r1", "PI_SUBAGENT_CHILD_AGENT": "worker", "PI_SUBAGENT_CHILD_INDEX": "2",
	}
	for k, v := range want {
		if len(m[k]) != 1 || m[k][0] != v {
			t.Errorf("%s = %v, want exactly [%s]", k, m[k], v)
		}
	}
	if _, ok := m["INTERCOM_ANSWER_FILE"]; ok {
		t.Errorf("a stale INTERCOM_ANSWER_FILE was passed on: %v", m["INTERCOM_ANSWER_FILE"])
	}
	r.AnswerFile = "/runs/r0/questions/q1/answer.json"
	m = envMap(ChildEnv(r, "/home/x"))
	if len(m["INTERCOM_ANSWER_FILE"]) != 1 || m["INTERCOM_ANSWER_FILE"][0] != r.AnswerFile {
		t.Errorf("INTERCOM_ANSWER_FILE = %v", m["INTERCOM_ANSWER_FILE"])
	}
}

func TestChildFromEnvReadsWhatChildEnvSets(t *testing.T) {
	t.Parallel()
	r := &Run{ID: "78f659a3", Agent: "worker", Index: 2, Supervisor: "sup-id", ChildSession: "subagent-worker-78f659a3-3", ChildSessionID: "child-78f659a3"}
	env := map[string]string{}
	for _, kv := range ChildEnv(r, "/home/x") {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	got, err := ChildFromEnv(func(k string) string { return env[k] })
	if want := (Child{Supervisor: "sup-id", RunID: "78f659a3", Agent: "worker", Index: 2}); err != nil || got != want {
		t.Fatalf("ChildFromEnv = %+v, %v; want %+v", got, err, want)
	}
	// The reference's names alone are enough.
	pi := map[string]string{}
	for k, v := range env {
		if strings.HasPrefix(k, "PI_SUBAGENT_") {
			pi[k] = v
		}
	}
	if got, err := ChildFromEnv(func(k string) string { return pi[k] }); err != nil || got.RunID != "78f659a3" || got.Index != 2 {
		t.Fatalf("from PI_SUBAGENT_* only: %+v, %v", got, err)
	}
	for _, tc := range []struct {
		name, key, value, want string
	}{
		{"no supervisor", EnvSupervisor, "", ErrNotChild.Error()},
		{"bad index", EnvIndex, "-1", "INTERCOM_CHILD_INDEX must be a non-negative integer"},
		{"bad run id", EnvRunID, "../x", "INTERCOM_RUN_ID: "},
	} {
		ours := map[string]string{EnvSupervisor: "s", EnvRunID: "78f659a3", EnvAgent: "a", EnvIndex: "0"}
		ours[tc.key] = tc.value
		_, err := ChildFromEnv(func(k string) string { return ours[k] })
		if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.name == "no supervisor") != errors.Is(err, ErrNotChild) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
