package hookcmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/intercom-dev/intercom/internal/agentsession"
	"github.com/intercom-dev/intercom/internal/hookclient"
	"github.com/intercom-dev/intercom/internal/hooks"
	"github.com/intercom-dev/intercom/internal/render"
	"github.com/intercom-dev/intercom/internal/reservations"
)

// preToolUse answers a Claude Code or Codex PreToolUse hook, or a Gemini
// CLI BeforeTool hook: a deny naming the holder when the call would edit a
// path another session holds; nothing (the call runs) otherwise, which for
// Gemini CLI is {} (it always reads JSON, even after a failure). A failure
// is one line on stderr: the call runs.
func preToolUse(ctx context.Context, call hooks.Call, e Env, connect func(bool) (*hookclient.Client, error)) {
	why, err := preToolBlock(ctx, call, e, connect)
	switch {
	case why != "":
		_, werr := e.Stdout.Write(reservations.DenyOutput(call.Harness, why))
		err = errors.Join(err, werr)
	case call.Harness == "gemini":
		_, werr := e.Stdout.Write(hooks.Empty)
		err = errors.Join(err, werr)
	}
	if err != nil {
		fmt.Fprintf(e.Stderr, "intercom hook %s %s: %s\n", call.Harness, call.Event, render.OneLine(err.Error()))
	}
}

// preToolBlock reads the hook input and returns why the call must not run
// ("" when it may).
func preToolBlock(ctx context.Context, call hooks.Call, e Env, connect func(bool) (*hookclient.Client, error)) (string, error) {
	in, data, err := hooks.ParseRaw(e.Stdin)
	if err != nil {
		return "", err
	}
	var tool struct {
		ToolInput json.RawMessage `json:"tool_input"`
	}
	if err := json.Unmarshal(data, &tool); err != nil {
		return "", fmt.Errorf("hook input is not JSON: %w", err)
	}
	if len(reservations.ToolPaths(in.ToolName, tool.ToolInput)) == 0 {
		return "", nil // writes nothing reservations know of: no broker call
	}
	c, err := connect(true)
	if err != nil {
		return "", err
	}
	defer c.Close()
	sid := agentsession.SessionID(call.Harness, in.SessionID)
	if p, err := agentsession.Harness(); err == nil {
		if b, ok := agentsession.Open(c.Home()).Load(p); ok {
			sid = b.Session
		}
	}
	return reservations.Blocked(ctx, c, sid, in.Cwd, in.ToolName, tool.ToolInput)
}
