//go:build harness

package harness

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// OpenCode is one real opencode process (`run` or `serve`).
type OpenCode struct {
	*Agent
	w   *World
	URL string // serve: http://127.0.0.1:PORT
}

// openCodeConfigDir is the world user's OpenCode config directory.
func (w *World) openCodeConfigDir() string { return filepath.Join(w.Home, ".config", "opencode") }

// InstallOpenCode runs the real `intercom install opencode` for the world's
// user, writes an opencode.json whose only provider is model, and copies
// @opencode-ai/plugin (with its dependencies) into the config directory.
func (w *World) InstallOpenCode(model *Model) string {
	w.t.Helper()
	dir := openCodeDir(w.t)
	out := w.OK("install", "opencode")
	cfg := w.openCodeConfigDir()
	config := map[string]any{
		"$schema": "https://opencode.ai/config.json",
		"provider": map[string]any{"standin": map[string]any{
			"npm": "@ai-sdk/openai-compatible", "name": "Stand-in",
			"options": map[string]any{"baseURL": model.URL + "/v1", "apiKey": "standin-not-a-key"},
			"models":  map[string]any{"m": map[string]any{"name": "m", "tool_call": true}},
		}},
		"model": "standin/m", "small_model": "standin/m",
		"permission": map[string]any{"bash": "allow", "edit": "allow", "external_directory": "allow"},
		"autoupdate": false, "share": "disabled",
	}
	if err := os.WriteFile(filepath.Join(cfg, "opencode.json"), []byte(mustJSON(config)), 0o644); err != nil {
		w.t.Fatal(err)
	}
	if outp, err := exec.Command("cp", "-a", filepath.Join(dir, "node_modules"), filepath.Join(cfg, "node_modules")).CombinedOutput(); err != nil {
		w.t.Fatalf("copy the plugin's packages: %v\n%s", err, outp)
	}
	// Not the 185 MB binary: the plugin needs only @opencode-ai/*, zod and such.
	for _, big := range []string{"opencode-ai", "opencode-linux-x64", "opencode-linux-x64-baseline", "opencode-linux-arm64"} {
		_ = os.RemoveAll(filepath.Join(cfg, "node_modules", big))
	}
	return out
}

// openCodeEnv keeps OpenCode offline and inside the world.
// OpenCode takes its directory from PWD, not the process's working
// directory: dir is given as both.
func (w *World) openCodeEnv(dir string) []string {
	return []string{"PWD=" + dir,
		"OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_SHARE=1", "NO_COLOR=1",
	}
}

func openCodeBin(t *testing.T) string {
	return filepath.Join(openCodeDir(t), "node_modules", ".bin", "opencode")
}

// RunOpenCode runs `opencode run --format json PROMPT` in dir (flags before
// the prompt, e.g. "-s", sessionID).
func (w *World) RunOpenCode(name, dir string, model *Model, prompt string, flags ...string) *OpenCode {
	w.t.Helper()
	return w.RunOpenCodeEnv(name, dir, model, prompt, nil, flags...)
}

// RunOpenCodeEnv is RunOpenCode with extra environment for opencode.
func (w *World) RunOpenCodeEnv(name, dir string, model *Model, prompt string, env []string, flags ...string) *OpenCode {
	w.t.Helper()
	argv := append([]string{openCodeBin(w.t), "run", "--format", "json", "--model", "standin/m"}, flags...)
	argv = append(argv, prompt)
	return &OpenCode{Agent: w.startAgent(name, dir, model, append(w.openCodeEnv(dir), env...), false, argv...), w: w}
}

var listening = regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`)

// serveStartTimeout bounds `opencode serve` starting up: a 185 MB Bun
// binary that took over three minutes to print its first line on a
// machine with a load average of 30-70.
const serveStartTimeout = 10 * time.Minute

// ServeOpenCode starts `opencode serve --hostname 127.0.0.1 --port N` in
// dir on a free port N (OpenCode reads --port 0 as its default, 4096) and
// waits for its "listening" line.
func (w *World) ServeOpenCode(name, dir string, model *Model) *OpenCode {
	w.t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		w.t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	_ = l.Close()
	a := w.startAgent(name, dir, model, w.openCodeEnv(dir), false, openCodeBin(w.t), "serve", "--hostname", "127.0.0.1", "--port", port)
	oc := &OpenCode{Agent: a, w: w}
	Await(w.t, serveStartTimeout, func() bool {
		if m := listening.FindStringSubmatch(a.Log()); m != nil {
			oc.URL = m[1]
			return true
		}
		return false
	}, "opencode serve to say it is listening")
	return oc
}

// api calls the serve HTTP API and decodes the answer into out (may be nil).
func (o *OpenCode) api(method, path string, body, out any) {
	o.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader([]byte(mustJSON(body)))
	}
	req, err := http.NewRequest(method, o.URL+path, rd)
	if err != nil {
		o.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := (&http.Client{Timeout: turnTimeout}).Do(req)
	if err != nil {
		o.t.Fatalf("opencode %s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode/100 != 2 {
		o.t.Fatalf("opencode %s %s: %s\n%s", method, path, res.Status, data)
	}
	if out != nil && len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			o.t.Fatalf("opencode %s %s: decode: %v\n%s", method, path, err, data)
		}
	}
}

// NewSession creates a session (POST /session) and returns its id.
func (o *OpenCode) NewSession() string {
	o.t.Helper()
	var s struct {
		ID string `json:"id"`
	}
	o.api("POST", "/session", map[string]any{}, &s)
	if s.ID == "" {
		o.t.Fatal("POST /session returned no id")
	}
	return s.ID
}

// PromptAsync starts a turn in session id (POST /session/ID/prompt_async).
func (o *OpenCode) PromptAsync(id, text string) {
	o.t.Helper()
	o.api("POST", "/session/"+id+"/prompt_async", map[string]any{
		"model": map[string]any{"providerID": "standin", "modelID": "m"},
		"parts": []any{map[string]any{"type": "text", "text": text}},
	}, nil)
}

// Busy reports whether session id is busy (GET /session/status).
func (o *OpenCode) Busy(id string) bool {
	o.t.Helper()
	var st map[string]struct {
		Type string `json:"type"`
	}
	o.api("GET", "/session/status", nil, &st)
	return st[id].Type == "busy"
}

// AwaitIdle waits until session id is no longer busy.
func (o *OpenCode) AwaitIdle(id string) {
	o.t.Helper()
	Await(o.t, turnTimeout, func() bool { return !o.Busy(id) }, "opencode session %s to be idle", id)
}

// SessionID is the session of a `run` (from its JSON events).
func (o *OpenCode) SessionID() string {
	for _, ev := range o.Events() {
		if id, _ := ev["sessionID"].(string); id != "" {
			return id
		}
	}
	return ""
}

// Finish waits for a `run` to end and fails the test unless it exits 0.
func (o *OpenCode) Finish(timeout time.Duration) {
	o.t.Helper()
	if code := o.Wait(timeout); code != 0 {
		o.t.Fatalf("%s: opencode run exited %d\n%s", o.Name, code, tailLines(o.Log(), 40))
	}
}

// intercomSession is the intercom session id of OpenCode session ses.
func intercomSession(ses string) string { return "oc-" + ses }

// OpenCodeBash is a call of OpenCode's bash tool.
func OpenCodeBash(command string) Call {
	return Call{Name: "bash", Args: map[string]any{"command": command, "description": "run " + strings.Fields(command + " x")[0]}}
}

// OpenCodeIntercom is a call of the plugin's intercom tool.
func OpenCodeIntercom(args map[string]any) Call { return Call{Name: "intercom", Args: args} }
