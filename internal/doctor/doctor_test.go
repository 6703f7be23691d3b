package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/intercom-dev/intercom/internal/install"
	"github.com/intercom-dev/intercom/internal/schema"
)

// roleEnv makes the test binary act as a program doctor starts: "mcp" an
// MCP stdio server with the tool intercom, "mcp-other" one without it,
// "codex-app-server" Codex's app-server (codex_test.go).
const roleEnv = "DOCTOR_TEST_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "mcp", "mcp-other":
		os.Exit(serveMCP(os.Getenv(roleEnv) == "mcp"))
	case "codex-app-server":
		os.Exit(serveCodexAppServer())
	}
	os.Exit(m.Run())
}

func serveMCP(withIntercom bool) int {
	srv := mcp.NewServer(&mcp.Implementation{Name: "intercom", Version: "test"}, nil)
	name := "intercom"
	if !withIntercom {
		name = "other"
	}
	mcp.AddTool(srv, &mcp.Tool{Name: name}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// machine is a temp home, project and PATH with fake harness executables
// (shell scripts printing a version) and an "intercom" that is this test
// binary serving MCP.
type machine struct {
	t              *testing.T
	home, dir, bin string
	intercom       string // the intercom program install entries run
}

func newMachine(t *testing.T, harnesses ...string) *machine {
	t.Helper()
	root := t.TempDir()
	m := &machine{t: t, home: filepath.Join(root, "home"), dir: filepath.Join(root, "proj"), bin: filepath.Join(root, "bin")}
	for _, d := range []string{m.home, m.dir, m.bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range harnesses {
		m.script(filepath.Join(m.bin, h), "echo '9.9.9 ("+h+")'")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	m.intercom = filepath.Join(root, "ic bin", "intercom") // a space: install quotes it
	m.script(m.intercom, fmt.Sprintf("%s=${%s:-mcp} exec '%s' \"$@\"", roleEnv, roleEnv, exe))
	return m
}

func (m *machine) script(path, body string) {
	m.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		m.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		m.t.Fatal(err)
	}
}

func (m *machine) write(path, body string) {
	m.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		m.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		m.t.Fatal(err)
	}
}

// install runs install's own Plans and Apply for harness in the user's
// settings, with command as the intercom binary.
func (m *machine) install(harness, command string) {
	m.t.Helper()
	m.installIn(harness, command, "")
}

// installIn is install in project's settings ("" for the user's).
func (m *machine) installIn(harness, command, project string) {
	m.t.Helper()
	t := install.Target{Harness: harness, Home: m.home, Project: project, Command: command}
	if harness == "pi" {
		t.AgentDir = install.PiAgentDir("", m.home)
	}
	plans, err := install.Plans(t, true)
	if err != nil {
		m.t.Fatal(err)
	}
	for _, p := range plans {
		if _, err := install.Apply(p); err != nil {
			m.t.Fatal(err)
		}
	}
}

// edit rewrites a file with old replaced by new (which must be there).
func (m *machine) edit(path, old, new string) {
	m.t.Helper()
	data, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(data), old) {
		m.t.Fatalf("%s has no %q (%v):\n%s", path, old, err, data)
	}
	m.write(path, strings.Replace(string(data), old, new, 1))
}

func (m *machine) run(harnesses ...string) schema.Doctor {
	m.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return Run(ctx, Options{Home: m.home, Dir: m.dir, Env: []string{"PATH=" + m.bin + ":/usr/bin:/bin", "HOME=" + m.home},
		Version: "test", Timeout: 20 * time.Second, Harnesses: harnesses})
}

// row is the check of harness in scope, or fails the test.
func row(t *testing.T, d schema.Doctor, harness, scope, check string) schema.DoctorCheck {
	t.Helper()
	c, ok := d.Find(harness, scope, check)
	if !ok {
		t.Fatalf("no %s %s %s row: %+v", harness, scope, check, d.Checks)
	}
	return c
}

func TestHealthyInstallsAreOK(t *testing.T) {
	t.Parallel()
	m := newMachine(t, "claude", "codex")
	m.install("claude", m.intercom)
	m.install("codex", m.intercom)
	r := m.run("claude", "codex")
	for _, c := range r.Checks {
		want := OK
		if c.Harness == "codex" && c.Check == "hooks" {
			want = Warn // the fake codex has no app-server: trust not checked
		}
		if c.Status != want {
			t.Errorf("%s %s %s: %s %q, want %s", c.Harness, c.Scope, c.Check, c.Status, c.Detail, want)
		}
	}
	if !r.OK {
		t.Errorf("report not OK: %+v", r.Checks)
	}
	if v := row(t, r, "claude", "", "version"); v.Detail != "9.9.9 (claude)" {
		t.Errorf("claude version %q", v.Detail)
	}
	if c := row(t, r, "codex", "user", "mcp"); !strings.Contains(c.Detail, "tools: intercom") {
		t.Errorf("codex mcp %q", c.Detail)
	}
}

// Each broken configuration gives its failing row, and the report is not OK.
func TestBrokenConfigsFail(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		harness string
		breakIt func(m *machine)
		check   string
		detail  string // in the failing row's detail
	}{
		{"claude settings malformed JSON", "claude", func(m *machine) {
			m.install("claude", m.intercom)
			m.write(filepath.Join(m.home, ".claude", "settings.json"), `{"hooks": {`)
		}, "config", "is not a JSON object"},
		{"claude entry points at a missing binary", "claude", func(m *machine) {
			m.install("claude", filepath.Join(m.dir, "gone", "intercom"))
		}, "installed", "which does not exist"},
		{"claude MCP command missing", "claude", func(m *machine) {
			m.install("claude", filepath.Join(m.dir, "gone", "intercom"))
		}, "mcp", "which does not exist"},
		{"claude hooks disabled", "claude", func(m *machine) {
			m.install("claude", m.intercom)
			m.edit(filepath.Join(m.home, ".claude", "settings.json"), "{", `{"disableAllHooks": true,`)
		}, "hooks", "disableAllHooks"},
		{"claude Stop hook removed", "claude", func(m *machine) {
			m.install("claude", m.intercom)
			m.edit(filepath.Join(m.home, ".claude", "settings.json"), `"Stop": [`, `"Stopped": [`)
		}, "hooks", "Stop hook"},
		{"claude MCP server exits at once", "claude", func(m *machine) {
			exits := filepath.Join(m.dir, "exits", "intercom")
			m.script(exits, "echo 'intercom: broker unreachable' >&2; exit 3")
			m.install("claude", exits)
		}, "mcp", "did not answer initialize"},
		{"claude MCP server without the intercom tool", "claude", func(m *machine) {
			other := filepath.Join(m.dir, "other", "intercom")
			m.script(other, fmt.Sprintf("%s=mcp-other exec '%s'", roleEnv, m.intercom))
			m.install("claude", other)
		}, "mcp", "has no intercom tool"},
		{"codex config.toml malformed", "codex", func(m *machine) {
			m.install("codex", m.intercom)
			m.edit(filepath.Join(m.home, ".codex", "config.toml"), "[features]", "[features")
		}, "config", "is not valid TOML"},
		{"codex hooks feature off", "codex", func(m *machine) {
			m.install("codex", m.intercom)
			m.edit(filepath.Join(m.home, ".codex", "config.toml"), "hooks = true", "hooks = false")
		}, "hooks", "hooks feature off"},
		{"codex hooks feature removed", "codex", func(m *machine) {
			m.install("codex", m.intercom)
			m.edit(filepath.Join(m.home, ".codex", "config.toml"), "hooks = true", "web_search = true")
		}, "hooks", "hooks feature off"},
		{"codex hooks.json malformed", "codex", func(m *machine) {
			m.install("codex", m.intercom)
			m.write(filepath.Join(m.home, ".codex", "hooks.json"), `{"hooks": [}`)
		}, "config", "is not a JSON object"},
		{"codex MCP server removed", "codex", func(m *machine) {
			m.install("codex", m.intercom)
			m.edit(filepath.Join(m.home, ".codex", "config.toml"), "[mcp_servers.intercom]", "[mcp_servers.renamed]")
		}, "installed", "no MCP server"},
		{"gemini settings malformed", "gemini", func(m *machine) {
			m.install("gemini", m.intercom)
			m.write(filepath.Join(m.home, ".gemini", "settings.json"), "{\n  // a comment is fine\n  \"mcpServers\": {,}\n}")
		}, "config", "is not valid JSON"},
		{"gemini AfterTool hook removed", "gemini", func(m *machine) {
			m.install("gemini", m.intercom)
			m.edit(filepath.Join(m.home, ".gemini", "settings.json"), `"AfterTool": [`, `"AfterToolX": [`)
		}, "hooks", "AfterTool"},
		{"gemini MCP server exits at once", "gemini", func(m *machine) {
			m.write(filepath.Join(m.home, ".gemini", "settings.json"), `{"mcpServers":{"intercom":{"command":"/bin/false","args":["mcp"]}}}`)
		}, "mcp", "did not answer initialize"},
		{"gemini entry points at a missing binary", "gemini", func(m *machine) {
			m.install("gemini", filepath.Join(m.dir, "gone", "intercom"))
		}, "installed", "which does not exist"},
		{"opencode config malformed", "opencode", func(m *machine) {
			m.install("opencode", m.intercom)
			m.write(filepath.Join(m.home, ".config", "opencode", "opencode.jsonc"), `{"mcp": {"intercom": }}`)
		}, "config", "is not valid JSON"},
		{"opencode plugin points at a missing binary", "opencode", func(m *machine) {
			m.install("opencode", filepath.Join(m.dir, "gone", "intercom"))
		}, "installed", "which does not exist"},
		{"opencode plugin not intercom's", "opencode", func(m *machine) {
			m.write(filepath.Join(m.home, ".config", "opencode", "plugin", "intercom.ts"), "export default async () => ({})\n")
		}, "config", "is not intercom's plugin"},
		{"pi settings malformed", "pi", func(m *machine) {
			m.install("pi", m.intercom)
			m.write(filepath.Join(m.home, ".pi", "agent", "settings.json"), `{"packages": [`)
		}, "config", "settings.json"},
		{"pi package not registered", "pi", func(m *machine) {
			m.install("pi", m.intercom)
			m.write(filepath.Join(m.home, ".pi", "agent", "settings.json"), `{"packages": []}`)
		}, "installed", "packages"},
		{"pi package file removed", "pi", func(m *machine) {
			m.install("pi", m.intercom)
			if err := os.Remove(filepath.Join(m.home, ".pi", "agent", install.PiPackageDir, "index.ts")); err != nil {
				m.t.Fatal(err)
			}
		}, "installed", "index.ts"},
		{"pi package points at a missing binary", "pi", func(m *machine) {
			m.install("pi", filepath.Join(m.dir, "gone", "intercom"))
		}, "installed", "which does not exist"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newMachine(t, tc.harness)
			tc.breakIt(m)
			r := m.run(tc.harness)
			c := row(t, r, tc.harness, "user", tc.check)
			if c.Status != Fail || !strings.Contains(c.Detail, tc.detail) {
				t.Errorf("%s row: %s %q, want fail with %q", tc.check, c.Status, c.Detail, tc.detail)
			}
			if c.Fix == "" {
				t.Errorf("%s row has no fix line", tc.check)
			}
			if r.OK {
				t.Errorf("report OK with a failing row: %+v", r.Checks)
			}
		})
	}
}

// What install writes for Gemini CLI, OpenCode and Pi is found and
// checked, read back with install's rules: Gemini CLI's settings may
// carry comments (Gemini allows them), its hooks and MCP server are
// checked like Claude Code's; Pi's package and OpenCode's plugin name the
// intercom binary they run.
func TestInstalledHarnessesFound(t *testing.T) {
	t.Parallel()
	m := newMachine(t, "gemini", "opencode", "pi")
	for _, h := range []string{"gemini", "opencode", "pi"} {
		m.install(h, m.intercom)
	}
	m.edit(filepath.Join(m.home, ".gemini", "settings.json"), "{", "{\n  // Gemini CLI accepts comments\n")
	r := m.run("gemini", "opencode", "pi")
	for _, want := range [][2]string{{"gemini", "config"}, {"gemini", "installed"}, {"gemini", "hooks"}, {"gemini", "mcp"},
		{"opencode", "config"}, {"opencode", "installed"}, {"pi", "config"}, {"pi", "installed"}} {
		if c := row(t, r, want[0], "user", want[1]); c.Status != OK {
			t.Errorf("%s %s: %s %q", want[0], want[1], c.Status, c.Detail)
		}
	}
	if c := row(t, r, "pi", "user", "installed"); !strings.Contains(c.Detail, m.intercom) {
		t.Errorf("pi installed names %q, want the binary %s", c.Detail, m.intercom)
	}
	if !r.OK {
		t.Errorf("report not OK: %+v", r.Checks)
	}
}

// A harness that is not on the machine is "not found", not a failure; one
// that is there without intercom says how to install it.
func TestNotFoundIsNoFailure(t *testing.T) {
	t.Parallel()
	m := newMachine(t, "codex")
	r := m.run("claude", "codex")
	if c := row(t, r, "claude", "", "found"); c.Status != None || !strings.Contains(c.Detail, "not found") {
		t.Errorf("claude: %s %q", c.Status, c.Detail)
	}
	if c := row(t, r, "codex", "user", "installed"); c.Status != None || c.Fix != "intercom install codex" {
		t.Errorf("codex: %s %q fix %q", c.Status, c.Detail, c.Fix)
	}
	if !r.OK {
		t.Errorf("report not OK: %+v", r.Checks)
	}
}

// Project settings are checked beside the user's, with install's
// --project in the fix.
func TestProjectScope(t *testing.T) {
	t.Parallel()
	m := newMachine(t, "claude")
	m.installIn("claude", m.intercom, m.dir)
	m.edit(filepath.Join(m.dir, ".mcp.json"), `"intercom": {`, `"intercom": {"env": {"`+roleEnv+`": "mcp-other"},`)
	r := m.run("claude")
	if c := row(t, r, "claude", "project", "mcp"); c.Status != Fail || c.Fix != "intercom install claude --project" {
		t.Errorf("project mcp (env from .mcp.json): %s %q fix %q", c.Status, c.Detail, c.Fix)
	}
	if c := row(t, r, "claude", "project", "hooks"); c.Status != OK {
		t.Errorf("project hooks: %s %q", c.Status, c.Detail)
	}
}

// Claude Code starts a project's .mcp.json server only once approved; the
// mcp row says what Claude Code's own `claude mcp list` says of it.
func TestClaudeProjectMCPApproval(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, state    string // as claude mcp list prints it
		status, detail string
	}{
		{"pending", "⏸ Pending approval (run `claude` to approve)", Warn, "not approved it yet"},
		{"connected", "✔ Connected", OK, "tools: intercom"},
		{"failed", "✘ Failed to connect", Warn, "claude mcp list says: ✘ Failed to connect"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newMachine(t)
			m.script(filepath.Join(m.bin, "claude"), fmt.Sprintf(`case "$1" in
--version) echo '9.9.9 (Claude Code)';;
mcp) printf 'Checking MCP server health…\n\nother: /bin/x - ✔ Connected\nintercom: %s mcp --harness claude - %s\n';;
esac`, m.intercom, tc.state))
			m.installIn("claude", m.intercom, m.dir)
			c := row(t, m.run("claude"), "claude", "project", "mcp")
			if c.Status != tc.status || !strings.Contains(c.Detail, tc.detail) {
				t.Errorf("mcp: %s %q, want %s with %q", c.Status, c.Detail, tc.status, tc.detail)
			}
		})
	}
}

// A Gemini CLI install without the BeforeTool hook (one older than
// reservations' enforcement) is a warning naming it, with the fix.
func TestGeminiWithoutBeforeToolWarns(t *testing.T) {
	t.Parallel()
	m := newMachine(t, "gemini")
	m.install("gemini", m.intercom)
	path := filepath.Join(m.home, ".gemini", "settings.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	delete(doc["hooks"].(map[string]any), "BeforeTool")
	if data, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	c := row(t, m.run("gemini"), "gemini", "user", "hooks")
	if c.Status != Warn || !strings.Contains(c.Detail, "BeforeTool") || c.Fix == "" {
		t.Errorf("gemini hooks without BeforeTool: %s %q fix %q", c.Status, c.Detail, c.Fix)
	}
}
