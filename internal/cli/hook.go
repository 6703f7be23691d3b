package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/intercom-dev/intercom/internal/agentsession"
	"github.com/intercom-dev/intercom/internal/hooks"
	"github.com/intercom-dev/intercom/internal/mcpserver"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// HookCmd answers a harness hook.
type HookCmd struct {
	Harness string `arg:"" help:"claude or codex."`
	Event   string `arg:"" help:"SessionStart, UserPromptSubmit, PostToolUse or Stop."`
}

// Help shows examples.
func (HookCmd) Help() string {
	return `Reads the harness's hook JSON on stdin and answers on stdout per its
contract (Claude Code and Codex share it):
  SessionStart      join (register or resume) the agent's session, report idle
  UserPromptSubmit  report thinking; deliver waiting messages as additionalContext
  PostToolUse       report tool:<name>; deliver waiting messages as additionalContext
  Stop              report idle; if messages wait, {"decision":"block","reason":…}
The hooks, the MCP server and the agent's shell commands act as one session
(see 'Agents' in docs/agents.md). An answer carries at most about 9,000
characters of whole messages; the rest waits for the next boundary, and a
longer message comes in numbered parts. Messages are acknowledged only
after the answer that completes them is written.
Nothing ever blocks the agent: on any problem (bad config, broker down,
empty or bad stdin) the hook prints one line on stderr and exits 0.
'intercom install claude|codex' writes these hooks into the settings.

Examples:
  echo '{"session_id":"abc","hook_event_name":"PostToolUse","tool_name":"Bash","cwd":"/src"}' | intercom hook claude PostToolUse`
}

// Run answers the hook. It always returns nil: a hook must never break the
// agent's turn (exit 2 would block a prompt or a tool), so every problem is
// one line on stderr.
func (h *HookCmd) Run(e *env) error {
	if err := h.run(e); err != nil {
		fmt.Fprintf(e.stderr, "intercom hook %s %s: %s\n", h.Harness, h.Event, strings.ReplaceAll(err.Error(), "\n", " "))
	}
	return nil
}

func (h *HookCmd) run(e *env) error {
	if err := hooks.Known(h.Harness, h.Event); err != nil {
		return err
	}
	in, err := hooks.Parse(e.stdin)
	if err != nil {
		return err
	}
	// Only SessionStart may be a first use; any later event continues a
	// session, so a missing home was deleted under it: say so, start nothing.
	c, err := e.connectHome(h.Event != hooks.SessionStart)
	if err != nil {
		return err
	}
	defer c.Close()
	home := c.Home()
	store := agentsession.Open(home)
	harness, err := agentsession.Harness()
	if err != nil {
		return err
	}
	b, err := store.Join(e.ctx, c, home, harness, agentsession.Request{
		Harness: h.Harness, HarnessSession: in.SessionID, FromHook: true,
		Name: os.Getenv("INTERCOM_NAME"), Cwd: in.Cwd,
	})
	if err != nil {
		return err
	}
	sid := b.Session
	e.g.Session = sid
	opts := agentsession.DeliverOptions{Render: e.renderer(), Limit: hooks.MaxContext}
	write := func(event string, block bool) func(string) error {
		return func(text string) error {
			out := hooks.ContextOutput(event, text)
			if block {
				out = hooks.BlockOutput(text)
			}
			_, err := e.stdout.Write(out)
			return err
		}
	}
	switch h.Event {
	case hooks.SessionStart:
		_, _ = c.SetState(e.ctx, sid, "idle", nil)
		intro := sessionIntro(b)
		wrote := false
		_, err := store.Deliver(e.ctx, c, sid, opts, func(text string) error {
			wrote = true
			return write(hooks.SessionStart, false)(intro + "\n\n" + text)
		})
		if !wrote && err == nil {
			err = write(hooks.SessionStart, false)(intro)
		}
		return err
	case hooks.UserPromptSubmit:
		_, _ = c.SetState(e.ctx, sid, "thinking", nil)
		_, err := store.Deliver(e.ctx, c, sid, opts, write(hooks.UserPromptSubmit, false))
		return err
	case hooks.PostToolUse:
		tool := strings.ReplaceAll(in.ToolName, " ", "_")
		if tool == "" {
			tool = "unknown"
		}
		_, _ = c.SetState(e.ctx, sid, "tool:"+tool, nil)
		_, err := store.Deliver(e.ctx, c, sid, opts, write(hooks.PostToolUse, false))
		return err
	case hooks.Stop:
		// Idle releases queued messages; anything that would wake the agent
		// keeps it working. Once this turn was continued by us
		// (stop_hook_active), only the rest of a message already being
		// delivered in parts may continue it: a bounded number of times.
		_, _ = c.SetState(e.ctx, sid, "idle", nil)
		opts.WakeOnly, opts.ContinueOnly = true, in.StopHookActive
		blocked := false
		_, err := store.Deliver(e.ctx, c, sid, opts, func(text string) error {
			blocked = true
			return write(hooks.Stop, true)(text)
		})
		if blocked {
			_, _ = c.SetState(e.ctx, sid, "thinking", nil)
		}
		return err
	}
	return nil
}

// sessionIntro is what SessionStart tells the model about intercom.
func sessionIntro(b agentsession.Binding) string {
	return fmt.Sprintf("intercom: this agent is the intercom session %q (id %s). Other agent sessions on this machine can message you; their messages appear here at tool boundaries. "+
		"Your shell commands act as this session with no --session: `intercom list` shows the others, `intercom send TARGET \"...\"` messages one (steer: it reaches them at their next tool boundary), "+
		"`intercom ask TARGET \"...\"` waits for an answer, `intercom reply \"...\"` answers an ask. The intercom MCP tool, if present, is the same session.", b.Name, b.Session)
}

// renderer formats a message for an agent with the configured reply hint.
func (e *env) renderer() func(wire.Message) string {
	return func(m wire.Message) string { return mcpserver.RenderMessage(m, e.cfg.ReplyHint) }
}

// joinable commands act as the agent's session when run by an agent
// without --session.
var joinable = map[string]bool{
	"send": true, "ask": true, "reply": true, "pending": true, "inbox": true, "state": true,
	"subscribe": true, "unsubscribe": true, "publish": true, "wait": true, "list": true, "status": true, "tool": true,
}

// joinAgent sets --session to the agent's session when this command runs
// on behalf of an agent (package agentsession) and none was given.
func (e *env) joinAgent(command string) {
	if e.g.Session != "" || !joinable[strings.Fields(command + " x")[0]] {
		return
	}
	connect := func() (*intercom.Client, error) { return e.connect() }
	b, ok, err := agentsession.Open(e.home()).ForCommand(e.ctx, e.home(), connect)
	if err != nil {
		e.log.Warn("join the agent's session", "err", err)
	}
	if ok {
		e.g.Session = b.Session
	}
}
