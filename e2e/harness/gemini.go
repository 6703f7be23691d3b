//go:build harness

package harness

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// GeminiMCPTool is the name Gemini CLI gives the intercom MCP tool
// (mcp_<server>_<tool>).
const GeminiMCPTool = "mcp_intercom_intercom"

// Gemini is one headless `gemini -p` run (a turn of a Gemini chat).
type Gemini struct {
	*Agent
}

// geminiUserSettings is what the user's ~/.gemini/settings.json holds
// before `intercom install gemini`: an API key login (the stand-in's) and
// no update checks or usage statistics.
var geminiUserSettings = map[string]any{
	"security": map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
	"general":  map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
	"privacy":  map[string]any{"usageStatisticsEnabled": false},
}

// InstallGemini writes the user's Gemini settings and runs the real
// `intercom install gemini`, which merges into them.
func (w *World) InstallGemini() string {
	w.t.Helper()
	return w.InstallGeminiWith()
}

// InstallGeminiWith is InstallGemini with more install flags.
func (w *World) InstallGeminiWith(flags ...string) string {
	w.t.Helper()
	if geminiBin == "" {
		w.t.Skip("gemini: " + geminiSkip)
	}
	dir := filepath.Join(w.Home, ".gemini")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		w.t.Fatal(err)
	}
	data, _ := json.MarshalIndent(geminiUserSettings, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), data, 0o600); err != nil {
		w.t.Fatal(err)
	}
	return w.OK(append([]string{"install", "gemini"}, flags...)...)
}

// geminiEnv points Gemini CLI at model with a dummy key and trusts the
// project folder (an untrusted one makes `gemini -p` exit 55).
func geminiEnv(model *Model) []string {
	return []string{
		"GOOGLE_GEMINI_BASE_URL=" + model.URL,
		"GEMINI_API_KEY=standin-not-a-key",
		"GEMINI_CLI_TRUST_WORKSPACE=true",
		"NO_COLOR=1",
	}
}

// RunGemini runs `gemini -p PROMPT` in dir against model (flags: e.g.
// "--session-id", ID for a first turn, "-r", ID for a later one).
func (w *World) RunGemini(name, dir string, model *Model, prompt string, env []string, flags ...string) *Gemini {
	w.t.Helper()
	argv := append([]string{geminiBin, "-p", prompt, "--approval-mode", "yolo", "-o", "stream-json", "-m", "gemini-2.5-flash"}, flags...)
	a := w.startAgent(name, dir, model, append(geminiEnv(model), env...), false, argv...)
	return &Gemini{Agent: a}
}

// Finish waits for the run to end and fails the test unless it exits 0.
func (g *Gemini) Finish(timeout time.Duration) {
	g.t.Helper()
	if code := g.Wait(timeout); code != 0 {
		g.t.Fatalf("%s: gemini -p exited %d\n%s", g.Name, code, tailLines(g.Log(), 40))
	}
}

// SessionID is the Gemini session of this run (from its init event).
func (g *Gemini) SessionID() string {
	for _, ev := range g.Events() {
		if ev["type"] == "init" {
			id, _ := ev["session_id"].(string)
			return id
		}
	}
	return ""
}

// AssistantText is the model's text the run showed, joined.
func (g *Gemini) AssistantText() string {
	var b strings.Builder
	for _, ev := range g.Events() {
		if ev["type"] == "message" && ev["role"] == "assistant" {
			text, _ := ev["content"].(string)
			b.WriteString(text)
		}
	}
	return b.String()
}

// Noise lists what the run showed that intercom's hooks must never cause:
// hook warnings or errors and intercom's own stderr lines.
func (g *Gemini) Noise() []string {
	var out []string
	for _, l := range strings.Split(g.Log(), "\n") {
		low := strings.ToLower(l)
		if strings.Contains(low, "intercom hook") || (strings.Contains(low, "hook") && (strings.Contains(low, "warn") || strings.Contains(low, "fail") || strings.Contains(low, "error"))) {
			out = append(out, l)
		}
	}
	return out
}

// GeminiShell is a call of Gemini CLI's shell tool.
func GeminiShell(command string) Call {
	return Call{Name: "run_shell_command", Args: map[string]any{"command": command, "description": "run " + command}}
}

// GeminiIntercom is a call of the intercom MCP tool as Gemini CLI names it.
func GeminiIntercom(args map[string]any) Call {
	return Call{Name: GeminiMCPTool, Args: args}
}

// geminiSession runs `gemini -p --session-id ID` for its first turn and
// `gemini -p -r ID` for the next ones: one Gemini chat, resumed.
type geminiSession struct {
	t   *testing.T
	w   *World
	dir string
	m   *Model
	env []string
	id  string
	ran int
	// runs are the turns run so far.
	runs []*Gemini
}

func (g *geminiSession) Turn(prompt, final string) {
	g.t.Helper()
	flag := "--session-id"
	if g.ran > 0 {
		flag = "-r"
	}
	g.ran++
	run := g.w.RunGemini(fmt.Sprintf("gemini-%d", g.ran), g.dir, g.m, prompt, g.env, flag, g.id)
	run.Finish(turnTimeout)
	g.runs = append(g.runs, run)
	if got := run.AssistantText(); !strings.HasSuffix(got, final) {
		g.t.Fatalf("the gemini run ended with %q, want it to end with %q", got, final)
	}
}

func (g *geminiSession) HarnessID() string { return g.id }

func (g *geminiSession) Check(t *testing.T) {
	t.Helper()
	for _, r := range g.runs {
		for _, l := range r.Noise() {
			t.Errorf("%s showed hook noise: %s", r.Name, l)
		}
	}
}

var geminiKind = kind{
	name: "gemini", install: (*World).InstallGemini, newModel: NewGemini,
	mcp: GeminiIntercom, shell: GeminiShell, stopMark: "new message(s) for this session",
	start: func(t *testing.T, w *World, dir string, m *Model, env ...string) session {
		return &geminiSession{t: t, w: w, dir: dir, m: m, env: env, id: newUUID()}
	},
}
