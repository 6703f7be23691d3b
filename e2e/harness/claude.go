//go:build harness

package harness

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ClaudeMCPTool is the name Claude Code gives the intercom MCP tool.
const ClaudeMCPTool = "mcp__intercom__intercom"

// Claude is one headless Claude Code session (`claude -p` with stream-json
// input), alive until its stdin closes.
type Claude struct {
	*Agent
	SessionID string
	next      int // index of the first event after the last awaited result
}

// InstallClaude runs the real `intercom install claude` for the world's user.
func (w *World) InstallClaude() string {
	w.t.Helper()
	return w.OK("install", "claude")
}

// Project makes a working directory for an agent under the world root.
func (w *World) Project(name string) string {
	w.t.Helper()
	dir := filepath.Join(w.Root, "src", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		w.t.Fatal(err)
	}
	return dir
}

// StartClaude starts Claude Code in dir against model, with extra env.
func (w *World) StartClaude(name, dir string, model *Model, env ...string) *Claude {
	w.t.Helper()
	sid := newUUID()
	a := w.startAgent(name, dir, model, append(claudeEnv(model), env...), true, w.claudeArgv(
		"-p", "--session-id", sid, "--input-format", "stream-json")...)
	return &Claude{Agent: a, SessionID: sid}
}

// RunClaudeOnce runs a one-shot `claude -p PROMPT` (no stream-json input:
// the process ends with the turn) and waits for it to exit.
func (w *World) RunClaudeOnce(name, dir string, model *Model, prompt string, env ...string) *Claude {
	w.t.Helper()
	sid := newUUID()
	a := w.startAgent(name, dir, model, append(claudeEnv(model), env...), false, w.claudeArgv(
		"-p", prompt, "--session-id", sid)...)
	c := &Claude{Agent: a, SessionID: sid}
	if code := c.Wait(turnTimeout); code != 0 {
		w.t.Fatalf("%s: claude -p exited %d\n%s", name, code, tailLines(c.Log(), 40))
	}
	return c
}

// claudeEnv points Claude Code at model, with a dummy key and no traffic
// beyond it.
func claudeEnv(model *Model) []string {
	return []string{
		"ANTHROPIC_BASE_URL=" + model.URL,
		"ANTHROPIC_API_KEY=sk-ant-standin-not-a-key",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
	}
}

// claudeArgv is the command line: the binary (or its node launcher), the
// given arguments, stream-json output and the tools the scripts call.
func (w *World) claudeArgv(args ...string) []string {
	bin := claudeBin
	if w.ClaudeBin != "" {
		bin = w.ClaudeBin
	}
	argv := []string{bin}
	if w.ClaudeViaNode {
		argv = []string{"node", claudeWrapper(bin)}
	}
	argv = append(argv, args...)
	return append(argv, "--output-format", "stream-json", "--verbose", "--allowedTools", ClaudeMCPTool+",Bash")
}

// claudeWrapper is the package's node launcher, which spawns the native
// binary as a child: what runs when npm's postinstall did not.
func claudeWrapper(bin string) string {
	return filepath.Join(filepath.Dir(filepath.Dir(bin)), "@anthropic-ai", "claude-code", "cli-wrapper.cjs")
}

// Prompt sends one user message.
func (c *Claude) Prompt(text string) {
	c.t.Helper()
	msg := map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text}}
	if _, err := fmt.Fprintln(c.stdin, mustJSON(msg)); err != nil {
		c.t.Fatalf("%s: write prompt: %v", c.Name, err)
	}
}

// AwaitResult waits for the next turn's result and returns it.
func (c *Claude) AwaitResult(timeout time.Duration) map[string]any {
	c.t.Helper()
	return c.awaitResult(timeout, "a turn's result", func(map[string]any) bool { return true })
}

// AwaitFinal waits for a turn that ends with the model's text final and
// returns its result. Turns in between are passed over: an idle agent may
// be woken (asyncRewake) and run scripted turns before a prompt does, so a
// flow is awaited by the text of its last scripted turn.
func (c *Claude) AwaitFinal(final string, timeout time.Duration) map[string]any {
	c.t.Helper()
	return c.awaitResult(timeout, "a turn ending with "+final, func(ev map[string]any) bool { return ev["result"] == final })
}

func (c *Claude) awaitResult(timeout time.Duration, what string, match func(map[string]any) bool) map[string]any {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	quiet := time.Now() // last sign of life: an event or a model request
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var passed []string // results passed over
	for {
		c.mu.Lock()
		evs, ch := c.events, c.changed
		c.mu.Unlock()
		for i := c.next; i < len(evs); i++ {
			if evs[i]["type"] != "result" {
				continue
			}
			if match(evs[i]) {
				c.next = i + 1
				return evs[i]
			}
			text := fmt.Sprint(evs[i]["result"])
			if strings.Contains(text, "blocked by hook") {
				c.t.Fatalf("%s: waiting for %s, a hook blocked the turn: %s", c.Name, what, text)
			}
			passed = append(passed, text)
			c.next = i + 1
		}
		select {
		case <-ch:
			quiet = time.Now()
		case <-c.Model.Changed():
			quiet = time.Now()
		case <-c.done:
			c.t.Fatalf("%s exited before %s (exit %v)", c.Name, what, c.cmd.ProcessState)
		case now := <-tick.C:
			// A turn ended otherwise and nothing has moved since: the flow is stuck.
			if len(passed) > 0 && now.Sub(quiet) > replyWait {
				c.t.Fatalf("%s: waiting for %s, the agent has been idle for %s after turns ending %q", c.Name, what, replyWait, passed)
			}
			if now.After(deadline) {
				c.t.Fatalf("%s: timed out after %s waiting for %s (turns ending %q passed over)", c.Name, timeout, what, passed)
			}
		}
	}
}

// Turn sends a prompt and waits for a turn that ends with final.
func (c *Claude) Turn(prompt, final string, timeout time.Duration) map[string]any {
	c.t.Helper()
	c.Prompt(prompt)
	return c.AwaitFinal(final, timeout)
}

// Close ends the session by closing its input and waits for it to exit.
func (c *Claude) Close() int {
	c.t.Helper()
	_ = c.stdin.Close()
	return c.Wait(60 * time.Second)
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// HookFailures lists the hook runs Claude Code reported with a non-zero
// exit (exit 2 blocks: on UserPromptSubmit it erases the user's prompt).
func (c *Claude) HookFailures() []string {
	var out []string
	for _, ev := range c.Events() {
		if ev["type"] != "system" || ev["subtype"] != "hook_response" {
			continue
		}
		if code, _ := ev["exit_code"].(float64); code != 0 {
			out = append(out, fmt.Sprintf("%v exit %v: %v", ev["hook_name"], code, ev["stderr"]))
		}
	}
	return out
}

// Bash is a call of Claude Code's shell tool.
func Bash(command string) Call {
	return Call{Name: "Bash", Args: map[string]any{"command": command, "description": "run " + command}}
}

// ClaudeIntercom is a call of the intercom MCP tool as Claude Code names it.
func ClaudeIntercom(args map[string]any) Call {
	return Call{Name: ClaudeMCPTool, Args: args}
}
