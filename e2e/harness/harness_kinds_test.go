//go:build harness

package harness

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// kind is one real harness as the shared tests drive it.
type kind struct {
	name     string
	setup    func(w *World) // after install: how the harness is launched
	install  func(w *World) string
	newModel func(t *testing.T) *Model
	mcp      func(args map[string]any) Call // the intercom MCP tool
	shell    func(command string) Call      // the harness's shell tool
	// stopMark starts what the model is sent when a Stop hook blocks.
	stopMark string
	start    func(t *testing.T, w *World, dir string, m *Model, env ...string) session
	// healthCheck starts and closes the MCP server with no tool call, as
	// the harness's own listing does (nil: the harness has none).
	healthCheck func(t *testing.T, w *World, dir string)
}

// session is one agent of a kind: prompts run one turn each.
type session interface {
	// Turn runs prompt and waits for a turn ending with the model's text
	// final; it fails the test if that never comes.
	Turn(prompt, final string)
	// HarnessID is the harness's own session id (Claude's session uuid,
	// Codex's thread id), once the first turn ran.
	HarnessID() string
	// Check fails the test for harness-reported hook failures.
	Check(t *testing.T)
}

var claudeKind = kind{
	name: "claude", install: (*World).InstallClaude, newModel: NewAnthropic,
	// Stop continues the turn with "Stop hook additional context: …"; the
	// asyncRewake wait, when it takes the message first, wakes it with
	// "Stop hook feedback" and "Stop hook blocking error from command …".
	mcp: ClaudeIntercom, shell: Bash, stopMark: "Stop hook ",
	start: func(t *testing.T, w *World, dir string, m *Model, env ...string) session {
		return claudeSession{w.StartClaude("claude", dir, m, env...)}
	},
	healthCheck: func(t *testing.T, w *World, dir string) {
		ctx, cancel := withTimeout(2 * time.Minute)
		defer cancel()
		list := exec.CommandContext(ctx, claudeBin, "mcp", "list")
		list.Dir, list.Env = dir, w.Env
		if out, err := list.CombinedOutput(); err != nil || !strings.Contains(string(out), "intercom") {
			t.Fatalf("claude mcp list: %v\n%s", err, out)
		}
	},
}

var codexKind = kind{
	name: "codex", install: (*World).InstallCodex, newModel: NewResponses,
	mcp: CodexIntercom, shell: Shell, stopMark: "<hook_prompt",
	start: func(t *testing.T, w *World, dir string, m *Model, env ...string) session {
		return &codexSession{t: t, w: w, dir: dir, m: m, env: env}
	},
}

// claudeOldestKind is Claude Code's oldest supported release (claudeKind
// is its current one).
var claudeOldestKind = func() kind {
	k := claudeKind
	k.name = "claude-" + claudeOldestPin.Version
	k.setup = func(w *World) { w.ClaudeBin = claudeOldestBin }
	return k
}()

// kinds are the harnesses every shared test runs against.
var kinds = []kind{claudeKind, claudeOldestKind, codexKind, geminiKind}

// eachKind runs test as a subtest per harness, each in a fresh world with
// the harness installed and a peer attached.
func eachKind(t *testing.T, ks []kind, test func(t *testing.T, k kind, w *World, peer *Peer)) {
	for _, k := range ks {
		t.Run(k.name, func(t *testing.T) {
			w := NewWorld(t)
			k.install(w)
			if k.setup != nil {
				k.setup(w)
			}
			test(t, k, w, w.StartPeer("peer"))
		})
	}
}

type claudeSession struct{ *Claude }

func (c claudeSession) Turn(prompt, final string) { c.Claude.Turn(prompt, final, turnTimeout) }
func (c claudeSession) HarnessID() string         { return c.SessionID }
func (c claudeSession) Check(t *testing.T)        { t.Helper(); noHookFailed(t, c.Claude) }

// codexSession runs `codex exec` for its first turn, `codex exec resume
// <thread>` for the next ones.
type codexSession struct {
	t      *testing.T
	w      *World
	dir    string
	m      *Model
	env    []string
	thread string
}

func (c *codexSession) Turn(prompt, final string) {
	c.t.Helper()
	cx := codexTurn(c.t, c.w, c.dir, c.m, c.thread, prompt, c.env...)
	if c.thread == "" {
		c.thread = cx.ThreadID()
	}
	if got := cx.AgentMessages(); len(got) == 0 || got[len(got)-1] != final {
		c.t.Fatalf("the codex run ended with the answers %q, want the last to be %q", got, final)
	}
}

func (c *codexSession) HarnessID() string { return c.thread }
func (c *codexSession) Check(*testing.T)  {}

// codexTurn runs one `codex exec` (a resume of thread when it is set) to
// completion and returns it.
func codexTurn(t *testing.T, w *World, dir string, m *Model, thread, prompt string, env ...string) *Codex {
	t.Helper()
	var flags []string
	if thread != "" {
		flags = []string{"resume", thread}
	}
	cx := w.StartCodexEnv("codex", dir, m, prompt, env, flags...)
	cx.Finish(turnTimeout)
	return cx
}
