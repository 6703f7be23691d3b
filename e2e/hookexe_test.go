package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// HookExe runs intercom-hook HARNESS EVENT (what install writes when it
// sits beside intercom) with input on stdin; it must exit 0.
func (a *Agent) HookExe(harness, event string, input map[string]any) (hookOut, agentAnswer) {
	a.t.Helper()
	data, _ := json.Marshal(input)
	r := a.do("hook", string(data), filepath.Join(binDir, "intercom-hook"), harness, event)
	if r.Code != 0 {
		a.t.Fatalf("intercom-hook %s %s: exit %d, stderr %s", harness, event, r.Code, r.Stderr)
	}
	return decodeHook(a.t, r.Stdout), r
}

// intercom-hook is `intercom hook`: it joins the agent's session (whose
// holder is `intercom hold`, run by the intercom beside it), hands each
// waiting message over once, shares the session's delivery with `intercom
// hook`, and answers the pre-tool event.
func TestHookExecutableIsIntercomHook(t *testing.T) {
	t.Parallel()
	h := newH(t)
	a := newAgent(t, h)
	out, r := a.HookExe("claude", "SessionStart", claudeInput("SessionStart", map[string]any{"source": "startup"}))
	if out.HookSpecificOutput == nil || !strings.Contains(out.HookSpecificOutput.AdditionalContext, "cc-8f3c2a1e") || r.Stderr != "" {
		t.Fatalf("SessionStart output %+v, stderr %q", out, r.Stderr)
	}
	holders := hookHolders(h)
	if len(holders) != 1 {
		t.Fatalf("session holders %v, want one", holders)
	}
	if exe, err := os.Readlink("/proc/" + strconv.Itoa(holders[0]) + "/exe"); err != nil || filepath.Base(exe) != "intercom" {
		t.Fatalf("holder runs %q (%v), want the intercom beside intercom-hook", exe, err)
	}
	sid := "cc-8f3c2a1e-4b5d-4c6e-9f70-123456789abc"
	for i := range 3 {
		h.OK("send", sid, fmt.Sprintf("note %d", i))
	}
	post := claudeInput("PostToolUse", map[string]any{"tool_name": "Bash", "tool_input": map[string]any{"command": "ls"}})
	out, _ = a.HookExe("claude", "PostToolUse", post)
	if out.HookSpecificOutput == nil || out.HookSpecificOutput.HookEventName != "PostToolUse" {
		t.Fatalf("PostToolUse output %+v", out)
	}
	for i := range 3 {
		if n := strings.Count(out.HookSpecificOutput.AdditionalContext, fmt.Sprintf("note %d", i)); n != 1 {
			t.Fatalf("note %d appears %d times in %q", i, n, out.HookSpecificOutput.AdditionalContext)
		}
	}
	if r := Row(h.Sessions("--scope", "all"), "claude-proj"); r["status"] != "tool:Bash" {
		t.Fatalf("status after PostToolUse: %v", r)
	}
	// Delivered once, whichever command answers the next boundary.
	if out, r := a.Hook("claude", "PostToolUse", post); out.HookSpecificOutput != nil {
		t.Fatalf("intercom hook delivered again: %s", r.Stdout)
	}
	if out, r := a.HookExe("claude", "PostToolUse", post); out.HookSpecificOutput != nil {
		t.Fatalf("intercom-hook delivered again: %s", r.Stdout)
	}
	// The pre-tool event: an edit of a path nobody reserved runs (no answer).
	pre := claudeInput("PreToolUse", map[string]any{"tool_name": "Edit", "tool_input": map[string]any{"file_path": filepath.Join(h.Cwd, "a.go")}})
	if _, r := a.HookExe("claude", "PreToolUse", pre); r.Stdout != "" || r.Stderr != "" {
		t.Fatalf("PreToolUse of a free path: stdout %q, stderr %q", r.Stdout, r.Stderr)
	}
}

// intercom install writes intercom-hook into the hooks when it sits beside
// intercom (as make build, make install and the release archives put it).
func TestInstallWritesIntercomHook(t *testing.T) {
	t.Parallel()
	h := newH(t)
	r := h.RunIn(h.Cwd, "", "install", "claude", "--project", "--dir", h.Cwd)
	if r.Code != 0 {
		t.Fatalf("install: %d %s", r.Code, r.Stderr)
	}
	settings, err := os.ReadFile(filepath.Join(h.Cwd, ".claude", "settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(binDir, "intercom-hook") + " claude PostToolUse"
	if !strings.Contains(string(settings), want) || strings.Contains(string(settings), " hook claude ") {
		t.Fatalf("settings.json runs no %q (or still `intercom hook`):\n%s", want, settings)
	}
}

// Against a broker of the previous release, which has no boundary request,
// intercom-hook reports and fetches as that release's hooks did (state,
// inbox): each message handed over once.
func TestHookExecutableAgainstAnOlderBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the previous release")
	}
	t.Parallel()
	old := oldBinaries(t, upgradeFrom)
	h := newH(t)
	inst := filepath.Join(h.Cwd, "bin")
	if err := os.MkdirAll(inst, 0o755); err != nil {
		t.Fatal(err)
	}
	upgInstall(t, old, inst, "intercom", "intercom-broker")
	if r := upgRun(t, h, filepath.Join(inst, "intercom"), "status"); r.Code != 0 {
		t.Fatalf("old intercom status: %d %s", r.Code, r.Stderr)
	}
	if exe := upgExe(h.BrokerPid()); exe != filepath.Join(inst, "intercom-broker") {
		t.Fatalf("broker runs %q, want the old one", exe)
	}
	a := newAgent(t, h)
	if out, r := a.HookExe("claude", "SessionStart", claudeInput("SessionStart", map[string]any{"source": "startup"})); out.HookSpecificOutput == nil || r.Stderr != "" {
		t.Fatalf("SessionStart against the old broker: %+v, stderr %q", out, r.Stderr)
	}
	sid := "cc-8f3c2a1e-4b5d-4c6e-9f70-123456789abc"
	h.OK("send", sid, "old-broker note")
	post := claudeInput("PostToolUse", map[string]any{"tool_name": "Bash", "tool_input": map[string]any{"command": "ls"}})
	out, r := a.HookExe("claude", "PostToolUse", post)
	if out.HookSpecificOutput == nil || strings.Count(out.HookSpecificOutput.AdditionalContext, "old-broker note") != 1 || r.Stderr != "" {
		t.Fatalf("PostToolUse against the old broker: %+v, stderr %q", out, r.Stderr)
	}
	if r := Row(h.Sessions("--scope", "all"), "claude-proj"); r["status"] != "tool:Bash" {
		t.Fatalf("status after PostToolUse: %v", r)
	}
	if out, r := a.HookExe("claude", "PostToolUse", post); out.HookSpecificOutput != nil {
		t.Fatalf("delivered again: %s", r.Stdout)
	}
}
