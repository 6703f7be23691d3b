//go:build harness

package harness

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// Codex is one `codex exec` run (a turn of a Codex thread).
type Codex struct {
	*Agent
}

// InstallCodex runs the real `intercom install codex` for the world's user.
func (w *World) InstallCodex() string {
	w.t.Helper()
	return w.OK("install", "codex")
}

// codexArgs point Codex at model through a model provider given on the
// command line (the user's config.toml stays as install wrote it).
func codexArgs(model *Model) []string {
	provider := fmt.Sprintf(`{name="standin", base_url="%s/v1", wire_api="responses", request_max_retries=0, stream_max_retries=0, stream_idle_timeout_ms=120000}`, model.URL)
	return []string{
		"-c", `model_provider="standin"`,
		"-c", "model_providers.standin=" + provider,
		"-c", `model="gpt-5.1-codex"`,
		"-c", "check_for_update_on_startup=false",
	}
}

// StartCodex runs `codex exec PROMPT` in dir against model. Extra flags go
// before the prompt (e.g. "resume", threadID for a later turn).
func (w *World) StartCodex(name, dir string, model *Model, prompt string, flags ...string) *Codex {
	w.t.Helper()
	return w.StartCodexEnv(name, dir, model, prompt, nil, flags...)
}

// StartCodexEnv is StartCodex with extra environment for codex.
func (w *World) StartCodexEnv(name, dir string, model *Model, prompt string, env []string, flags ...string) *Codex {
	w.t.Helper()
	argv := []string{codexBin, "exec"}
	if w.CodexNative {
		argv[0] = codexNative(w.t)
	}
	var sub []string
	if len(flags) > 0 && flags[0] == "resume" {
		sub, flags = flags[:2], flags[2:]
	}
	argv = append(argv, sub...)
	argv = append(argv, "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox")
	if !w.CodexHooksTrusted {
		argv = append(argv, "--dangerously-bypass-hook-trust")
	}
	argv = append(argv, codexArgs(model)...)
	argv = append(argv, flags...)
	argv = append(argv, prompt)
	a := w.startAgent(name, dir, model, append([]string{"OPENAI_API_KEY=sk-standin-not-a-key", "NO_COLOR=1"}, env...), false, argv...)
	return &Codex{Agent: a}
}

// codexNative is the native binary the npm launcher (codex.js) runs.
func codexNative(t *testing.T) string {
	t.Helper()
	found, _ := filepath.Glob(filepath.Join(filepath.Dir(filepath.Dir(codexBin)), "@openai", "codex-*", "vendor", "*", "bin", "codex"))
	if len(found) != 1 {
		t.Fatalf("cannot find the native codex binary (found %q)", found)
	}
	return found[0]
}

// Finish waits for the run to end and fails the test unless it exits 0.
func (c *Codex) Finish(timeout time.Duration) {
	c.t.Helper()
	if code := c.Wait(timeout); code != 0 {
		c.t.Fatalf("%s: codex exec exited %d\n%s", c.Name, code, tailLines(c.Log(), 40))
	}
}

// ThreadID is the Codex thread of this run (from its thread.started event).
func (c *Codex) ThreadID() string {
	for _, ev := range c.Events() {
		if ev["type"] == "thread.started" {
			id, _ := ev["thread_id"].(string)
			return id
		}
	}
	return ""
}

// Shell is a call of Codex's shell tool.
func Shell(command string) Call {
	return Call{Name: "exec_command", Args: map[string]any{"cmd": command}}
}

// CodexIntercom is a call of the intercom MCP tool as Codex offers it
// (tool intercom in namespace mcp__intercom).
func CodexIntercom(args map[string]any) Call {
	return Call{Name: "intercom", Namespace: "mcp__intercom", Args: args}
}

// AgentMessages are the model's texts the run showed, in order.
func (c *Codex) AgentMessages() []string {
	var out []string
	for _, ev := range c.Events() {
		if item, _ := ev["item"].(map[string]any); ev["type"] == "item.completed" && item["type"] == "agent_message" {
			text, _ := item["text"].(string)
			out = append(out, text)
		}
	}
	return out
}
