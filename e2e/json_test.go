package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/intercom-dev/intercom/internal/runs"
)

const schemaBase = "https://github.com/intercom-dev/intercom/docs/schemas/"

var (
	schemasOnce sync.Once
	schemas     map[string]*jsonschema.Schema
	schemasErr  error
)

// loadSchemas compiles every docs/schemas/*.json with a maintained
// validator (santhosh-tekuri/jsonschema).
func loadSchemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	schemasOnce.Do(func() {
		files, err := filepath.Glob("../docs/schemas/*.json")
		if err != nil || len(files) == 0 {
			schemasErr = err
			return
		}
		c := jsonschema.NewCompiler()
		for _, f := range files {
			r, err := os.Open(f)
			if err != nil {
				schemasErr = err
				return
			}
			doc, err := jsonschema.UnmarshalJSON(r)
			r.Close()
			if err != nil {
				schemasErr = err
				return
			}
			if err := c.AddResource(schemaBase+filepath.Base(f), doc); err != nil {
				schemasErr = err
				return
			}
		}
		schemas = map[string]*jsonschema.Schema{}
		for _, f := range files {
			name := strings.TrimSuffix(filepath.Base(f), ".json")
			if schemas[name], schemasErr = c.Compile(schemaBase + filepath.Base(f)); schemasErr != nil {
				return
			}
		}
	})
	if schemasErr != nil || len(schemas) == 0 {
		t.Fatalf("load docs/schemas: %v (%d schemas)", schemasErr, len(schemas))
	}
	return schemas
}

// checkJSON validates each line of out against docs/schemas/<name>.json.
func checkJSON(t *testing.T, name, out string) {
	t.Helper()
	sch := loadSchemas(t)[name]
	if sch == nil {
		t.Fatalf("no schema %s", name)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if strings.TrimSpace(out) == "" {
		t.Errorf("%s: no output to validate", name)
		return
	}
	for _, l := range lines {
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(l))
		if err != nil {
			t.Errorf("%s: not JSON: %v\n%s", name, err, l)
			continue
		}
		if err := sch.Validate(inst); err != nil {
			t.Errorf("%s: output does not match its schema: %v\n%s", name, err, l)
		}
	}
}

// runJSON runs a --json command and validates its stdout; want is the exit
// status expected.
func runJSON(t *testing.T, h *H, bin, schema string, want int, args ...string) string {
	t.Helper()
	var res Result
	if bin == "agent-runs" {
		res = h.Runs(append([]string{"--json"}, args...)...)
	} else {
		res = h.Run(append([]string{"--json"}, args...)...)
	}
	if res.Code != want {
		t.Fatalf("%s --json %v: exit %d, want %d\nstdout: %s\nstderr: %s", bin, args, res.Code, want, res.Stdout, res.Stderr)
	}
	checkJSON(t, schema, res.Stdout)
	return res.Stdout
}

func nextLine(t *testing.T, p *Proc, what string) string {
	t.Helper()
	l, ok := p.Line(30 * time.Second)
	if !ok {
		t.Fatalf("no %s from %v; stderr: %s", what, p.Cmd.Args, p.Stderr())
	}
	return l
}

// TestJSONOutputsMatchSchemas runs every command with --json, as a user
// would, and validates what each really prints against its schema in
// docs/schemas (generated from the Go types, internal/schema).
func TestJSONOutputsMatchSchemas(t *testing.T) {
	t.Parallel()
	h := rsH(t)
	planner := h.Start("--json", "attach", "--name", "planner")
	checkJSON(t, "intercom-attach-attached", nextLine(t, planner, "attached line"))
	worker := h.Start("--json", "attach", "--name", "worker", "--model", "m1")
	checkJSON(t, "intercom-attach-attached", nextLine(t, worker, "attached line"))

	runJSON(t, h, "intercom", "intercom-list", 0, "list")
	runJSON(t, h, "intercom", "intercom-list", 0, "list", "--scope", "all", "--all")
	runJSON(t, h, "intercom", "intercom-status", 0, "status")
	runJSON(t, h, "intercom", "intercom-status", 0, "-s", "planner", "status")
	runJSON(t, h, "intercom", "intercom-state", 0, "-s", "worker", "state", "thinking")
	runJSON(t, h, "intercom", "intercom-state", 0, "-s", "worker", "state", "idle")

	out := runJSON(t, h, "intercom", "intercom-send", 0, "-s", "planner", "send", "worker", "hello", "--context", "note=see plan")
	var sent struct{ ID string }
	_ = json.Unmarshal([]byte(out), &sent)
	checkJSON(t, "intercom-message", nextLine(t, worker, "message"))
	runJSON(t, h, "intercom", "intercom-trace", 0, "trace", sent.ID)

	// ask, pending, reply
	ask := h.Start("--json", "-s", "planner", "ask", "worker", "Ship it?")
	checkJSON(t, "intercom-message", nextLine(t, worker, "ask"))
	runJSON(t, h, "intercom", "intercom-pending", 0, "-s", "worker", "pending")
	runJSON(t, h, "intercom", "intercom-reply", 0, "-s", "worker", "reply", "yes")
	checkJSON(t, "intercom-ask", nextLine(t, ask, "ask result"))

	// an offline session: ask refused, mail stored, inbox, wait, forget
	ghost, _ := h.Attach("--name", "ghost")
	ghost.Kill()
	Eventually(t, 20*time.Second, func() bool { r := Row(h.Sessions("--all"), "ghost"); return r != nil && r["connected"] == false }, "ghost to disconnect")
	runJSON(t, h, "intercom", "intercom-ask", 1, "-s", "planner", "ask", "ghost", "there?")
	runJSON(t, h, "intercom", "intercom-send", 0, "-s", "planner", "send", "ghost", "for later")
	runJSON(t, h, "intercom", "intercom-inbox", 0, "-s", "ghost", "inbox", "--peek")
	runJSON(t, h, "intercom", "intercom-wait", 2, "-s", "ghost", "wait", "--timeout", "10s")
	runJSON(t, h, "intercom", "intercom-inbox", 0, "-s", "ghost", "inbox")
	runJSON(t, h, "intercom", "intercom-forget", 0, "forget", "ghost", "--yes")

	// topics
	runJSON(t, h, "intercom", "intercom-subscribe", 0, "-s", "worker", "subscribe", "repo/api", "--await-release")
	runJSON(t, h, "intercom", "intercom-publish", 0, "-s", "planner", "publish", "repo/api", "--resource", "db", "--ownership", "held", "migrating")
	runJSON(t, h, "intercom", "intercom-publish", 0, "-s", "planner", "publish", "repo/api", "--event", "blocker", "stop deploys")
	checkJSON(t, "intercom-message", nextLine(t, worker, "blocker wake-up"))
	runJSON(t, h, "intercom", "intercom-topics", 0, "topics")
	runJSON(t, h, "intercom", "intercom-topics", 0, "topics", "repo/api")
	runJSON(t, h, "intercom", "intercom-unsubscribe", 0, "-s", "worker", "unsubscribe", "repo/api")

	// install (dry run, in a scratch HOME)
	home := t.TempDir()
	res, _ := h.runMeasured("intercom", nil, []string{"HOME=" + home}, "--json", "install", "claude", "--dry-run")
	if res.Code != 0 {
		t.Fatalf("install: %+v", res)
	}
	checkJSON(t, "intercom-install", res.Stdout)
	res, _ = h.runMeasured("intercom", nil, []string{"HOME=" + home}, "--json", "uninstall", "codex", "--dry-run")
	checkJSON(t, "intercom-install", res.Stdout)

	// errors: a failure (exit 1) and a usage error (exit 2) as the envelope
	for _, tc := range []struct {
		code int
		args []string
	}{
		{1, []string{"send", "nobody", "x"}},
		{2, []string{"send"}},
		{2, []string{"ask", "--timeout", "-1s", "worker", "x"}},
		{2, []string{"--session", "worker", "state", "bogus"}},
	} {
		res := h.Run(append([]string{"--json"}, tc.args...)...)
		if res.Code != tc.code || res.Stderr != "" {
			t.Errorf("--json %v: exit %d, stderr %q; want exit %d and nothing on stderr", tc.args, res.Code, res.Stderr, tc.code)
		}
		checkJSON(t, "error", res.Stdout)
	}
	if res := h.Runs("--json", "status", "nope"); res.Code != 1 || res.Stderr != "" {
		t.Errorf("agent-runs --json status nope: %+v", res)
	} else {
		checkJSON(t, "error", res.Stdout)
	}

	// supervised runs: progress, a question answered durably, control
	script := rsScript(t, h.Cwd, "child.sh", `
intercom --json contact-supervisor --reason progress_update -m "found it" > progress.json
intercom --json contact-supervisor --reason need_decision -m "Which API?" > answer.json
`)
	id := rsStart(t, h, h.Cwd, "planner", "--agent", "worker", "--", "/bin/sh", script)
	q := rsAwaitQuestion(t, h, id)
	runJSON(t, h, "agent-runs", "agent-runs-list", 0, "--supervisor", "planner", "list")
	runJSON(t, h, "agent-runs", "agent-runs-status", 0, "status", id)
	runJSON(t, h, "agent-runs", "agent-runs-questions", 0, "questions")
	runJSON(t, h, "agent-runs", "agent-runs-answer", 0, "answer", id, "--question-id", q.ID, "Stable.")
	rsAwaitRun(t, h, id, "completed", rsFinished(runs.StateCompleted))
	for file, schema := range map[string]string{"progress.json": "intercom-contact-progress", "answer.json": "intercom-contact-answer"} {
		data, err := os.ReadFile(filepath.Join(h.Cwd, file))
		if err != nil {
			t.Fatal(err)
		}
		checkJSON(t, schema, string(data))
	}
	runJSON(t, h, "agent-runs", "agent-runs-nudge", 0, "nudge", id)
	runJSON(t, h, "agent-runs", "agent-runs-stop", 0, "stop", id)
	runJSON(t, h, "agent-runs", "agent-runs-start-wait", 0, "--supervisor", "planner", "start", "--agent", "quick", "--wait", "--", "/bin/sh", "-c", "echo done")
	out = runJSON(t, h, "agent-runs", "agent-runs-start", 0, "--supervisor", "planner", "start", "--agent", "sleeper", "--", "/bin/sh", "-c", "sleep 60")
	var started struct {
		RunID string `json:"run_id"`
	}
	_ = json.Unmarshal([]byte(out), &started)
	runJSON(t, h, "agent-runs", "agent-runs-nudge", 0, "nudge", started.RunID, "keep going")
	runJSON(t, h, "agent-runs", "agent-runs-stop", 0, "stop", started.RunID, "--grace", "0")

	// a broker restart: the holders reconnect and say so
	h.KillBroker()
	for {
		l := nextLine(t, worker, "reconnected line")
		if strings.Contains(l, `"event":"reconnected"`) {
			checkJSON(t, "intercom-attach-reconnected", l)
			break
		}
		checkJSON(t, "intercom-message", l) // e.g. a run's completion notice
	}
}

// TestJSONVersionMatchesSchema: `version --json` of all four binaries
// matches docs/schemas/version.json.
func TestJSONVersionMatchesSchema(t *testing.T) {
	t.Parallel()
	h := newH(t)
	for _, bin := range []string{"intercom", "agent-runs", "intercom-bridge", "intercom-broker"} {
		out, err := h.cmd(t.Context(), bin, "version", "--json").Output()
		if err != nil {
			t.Fatalf("%s version --json: %v", bin, err)
		}
		checkJSON(t, "version", string(out))
	}
}

// TestJSONBridgeOutputsMatchSchemas: what intercom-bridge --json prints
// (certificates, the nats-server configuration, serve's events, status and
// purge) matches docs/schemas.
func TestJSONBridgeOutputsMatchSchemas(t *testing.T) {
	t.Parallel()
	h := brgNewH(t)
	h.OK("list") // a broker for status and purge
	dir := filepath.Join(t.TempDir(), "ca")
	bridgeJSON := func(schema string, args ...string) {
		t.Helper()
		r := brgRun(t, h, append([]string{"--json"}, args...)...)
		if r.Code != 0 {
			t.Fatalf("intercom-bridge --json %v: exit %d, stderr %s", args, r.Code, r.Stderr)
		}
		checkJSON(t, schema, r.Stdout)
	}
	bridgeJSON("intercom-bridge-certs-init", "certs", "init", "--dir", dir)
	for _, host := range []string{"alpha", "beta", "nats"} {
		bridgeJSON("intercom-bridge-certs-issue", "certs", "issue", "--dir", dir, "--name", host)
	}
	bridgeJSON("intercom-bridge-certs-revoke", "certs", "revoke", "--dir", dir, "--name", "beta")
	bridgeJSON("intercom-bridge-certs-crl", "certs", "crl", "--dir", dir)
	bridgeJSON("intercom-bridge-nats-config", "nats-config", "--cert", filepath.Join(dir, "nats.crt"), "--key", filepath.Join(dir, "nats.key"),
		"--ca", filepath.Join(dir, "ca.crt"), "--dir", dir)
	bridgeJSON("intercom-bridge-status", "status")
	p := h.StartBin("intercom-bridge", append([]string{"--json", "serve", "--listen", "127.0.0.1:0"}, brgMat(dir, "alpha", "gamma").args()...)...)
	checkJSON(t, "intercom-bridge-event", nextLine(t, p, "serve's ready event"))
	Eventually(t, brgWait, func() bool {
		r := brgRun(t, h, "--json", "status")
		return r.Code == 0 && strings.Contains(r.Stdout, `"name":"alpha"`)
	}, "the bridge in status")
	bridgeJSON("intercom-bridge-status", "status")
	bridgeJSON("intercom-bridge-purge", "purge", "gamma")
}
