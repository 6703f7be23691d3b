package intercomcmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/intercom-dev/intercom/internal/agentsession"
	"github.com/intercom-dev/intercom/internal/hooks"
	"github.com/intercom-dev/intercom/internal/install"
	"github.com/intercom-dev/intercom/internal/reservations"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// PreToolUse is the pre-tool hook event: it answers whether a file-editing
// tool call may run (reservations), and nothing else.
const PreToolUse = "PreToolUse"

// preTool reports whether h is the pre-tool event: PreToolUse, or Gemini
// CLI's BeforeTool.
func (h *HookCmd) preTool() bool {
	return h.Event == PreToolUse || (h.Harness == "gemini" && h.Event == install.GeminiBeforeTool)
}

// preToolUse answers a Claude Code or Codex PreToolUse hook, or a Gemini
// CLI BeforeTool hook: a deny naming the holder when the call would edit a
// path another session holds; nothing (the call runs) otherwise, which for
// Gemini CLI is {} (it always reads JSON, even after a failure). A failure
// is the caller's stderr line: the call runs.
func (h *HookCmd) preToolUse(e *env) error {
	why, err := h.preToolBlock(e)
	switch {
	case why != "":
		_, werr := e.stdout.Write(reservations.DenyOutput(h.Harness, why))
		return errors.Join(err, werr)
	case h.Harness == "gemini":
		_, werr := e.stdout.Write([]byte("{}\n"))
		return errors.Join(err, werr)
	}
	return err
}

// preToolBlock reads the hook input and returns why the call must not run
// ("" when it may).
func (h *HookCmd) preToolBlock(e *env) (string, error) {
	in, data, err := hooks.ParseRaw(e.stdin)
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
	c, err := e.connectHome(true)
	if err != nil {
		return "", err
	}
	defer c.Close()
	sid := agentsession.SessionID(h.Harness, in.SessionID)
	if p, err := agentsession.Harness(); err == nil {
		if b, ok := agentsession.Open(c.Home()).Load(p); ok {
			sid = b.Session
		}
	}
	return reservations.Blocked(e.ctx, c, sid, in.Cwd, in.ToolName, tool.ToolInput)
}

// checkTool is `reservations --check-tool NAME`: the pre-tool decision for
// an extension (Pi's tool_call), on the tool input JSON on stdin, as this
// session, relative to the current directory.
func (r *ReservationsCmd) checkTool(e *env) error {
	data, err := io.ReadAll(io.LimitReader(e.stdin, hooks.MaxInput+1))
	if err != nil {
		return fmt.Errorf("read tool input: %w", err)
	}
	var v wire.ReservationToolVerdict
	if len(reservations.ToolPaths(r.CheckTool, data)) > 0 {
		c, err := e.connect()
		if err != nil {
			return err
		}
		defer c.Close()
		self, err := e.self(c)
		if err != nil {
			return err
		}
		cwd, err := os.Getwd()
		if err != nil {
			return err
		}
		if v.Reason, err = reservations.Blocked(e.ctx, c, self, cwd, r.CheckTool, data); err != nil {
			return err
		}
		v.Block = v.Reason != ""
	}
	if e.g.JSON {
		return e.printJSON(v)
	}
	if v.Block {
		fmt.Fprintln(e.stdout, v.Reason)
	} else {
		fmt.Fprintln(e.stdout, "Not blocked.")
	}
	return nil
}
