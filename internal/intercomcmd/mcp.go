package intercomcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/intercom-dev/intercom/internal/buildinfo"
	"github.com/intercom-dev/intercom/internal/mcpserver"
	"github.com/intercom-dev/intercom/internal/runs"
	"github.com/intercom-dev/intercom/internal/schema"
)

// McpCmd serves MCP on stdio.
type McpCmd struct {
	Name    string `env:"INTERCOM_NAME" help:"Session name (default: the agent's, else alias session-<8 hex>)." placeholder:"NAME"`
	ID      string `name:"id" env:"INTERCOM_SESSION_ID" help:"Act as this session id of its own (8-80 of A-Z a-z 0-9 _ -), not the agent's." placeholder:"ID"`
	Harness string `enum:"claude,codex,gemini," default:"" help:"The agent harness that runs this server (install sets it): join the agent's session."`
}

// Help shows examples.
func (McpCmd) Help() string {
	return `An MCP stdio server for any MCP client (Claude Code, Codex, ...). It holds
exposes the tool "intercom" (actions list, send, ask, reply, pending,
status, subscribe, unsubscribe, publish, topics) and, inside a run started by
agent-runs, "contact_supervisor". Under Claude Code, Codex or Gemini CLI it
acts as the agent's one session, the same as its hooks and shell commands;
under any other MCP client it holds a session of its own. Nothing is registered before
the first tool call. Results are text; messages that arrived are appended to
the next result unless the harness's hooks deliver them.

Examples:
  claude mcp add intercom -- intercom mcp --harness claude
  intercom mcp --name reviewer`
}

// Run serves.
func (m *McpCmd) Run(e *env) error {
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	opts := mcpserver.Options{Client: c, Name: m.Name, Session: m.ID, Harness: m.Harness, Config: e.cfg, Version: buildinfo.Version(), Log: e.log}
	// Inside a run (even one whose variables are malformed: the tool then
	// says what is wrong), the server offers contact_supervisor.
	if _, err := runs.ChildFromEnv(os.Getenv); !errors.Is(err, runs.ErrNotChild) {
		opts.Child = contactViaCLI
	}
	return mcpserver.Run(e.ctx, opts, &mcp.StdioTransport{})
}

// contactViaCLI runs `intercom --json contact-supervisor` (same binary, same
// environment), which saves the question and waits durably.
func contactViaCLI(ctx context.Context, reason, message string, interview map[string]any) (string, map[string]any, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	args := []string{"--json", "contact-supervisor", "--reason", reason}
	if message != "" {
		args = append(args, "--message", message)
	}
	var stdin []byte
	if interview != nil {
		args = append(args, "--interview", "-")
		stdin, _ = json.Marshal(interview)
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		// With --json a failure is the error envelope on stdout.
		var fail schema.Error
		if json.Unmarshal(out.Bytes(), &fail) == nil && fail.Error.Message != "" {
			return "", nil, errors.New(fail.Error.Message)
		}
		return "", nil, fmt.Errorf("contact-supervisor: %v: %s", err, strings.TrimSpace(errb.String()))
	}
	var res map[string]any
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return "", nil, fmt.Errorf("contact-supervisor output: %w", err)
	}
	if reply, ok := res["reply"].(string); ok {
		text := "Reply from supervisor: " + reply
		if why, _ := res["structured_reply_error"].(string); why != "" {
			text += "\n(structured reply not usable: " + why + ")"
		}
		structured, _ := res["structured_reply"].(map[string]any) // an interview's {"responses": [...]}
		return text, structured, nil
	}
	return "Progress update accepted; it steers at the supervisor's next tool boundary (acceptance does not confirm it was read).", res, nil
}
