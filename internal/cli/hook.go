package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/intercom-dev/intercom/internal/agentsession"
	"github.com/intercom-dev/intercom/internal/hooks"
	"github.com/intercom-dev/intercom/internal/mcpserver"
	"github.com/intercom-dev/intercom/internal/render"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// HookCmd answers a harness hook.
type HookCmd struct {
	Harness string `arg:"" help:"claude, codex or gemini."`
	Event   string `arg:"" help:"SessionStart, UserPromptSubmit, PostToolUse or Stop (Gemini CLI: SessionStart, BeforeAgent, AfterTool or AfterAgent)."`
	// Hold makes Stop wait for a waking message when none is there: the
	// only way to wake an idle Gemini CLI, which keeps its turn open (and
	// the user's typed input waiting) meanwhile.
	Hold time.Duration `help:"Stop/AfterAgent only: when no waking message waits, wait up to DUR for one and continue the turn with it (holds the turn open meanwhile; not after a continued turn, stop_hook_active)." zero:"do not wait" placeholder:"DUR"`
}

// Help shows examples.
func (HookCmd) Help() string {
	return `Reads the harness's hook JSON on stdin and answers on stdout per its
contract (Claude Code and Codex share it; Gemini CLI's is the same JSON
under the names BeforeAgent, AfterTool and AfterAgent):
  SessionStart      join (register or resume) the agent's session, report idle
  UserPromptSubmit  report thinking; deliver waiting messages as additionalContext
  PostToolUse       report tool:<name>; deliver waiting messages as additionalContext
  Stop              report idle; if messages wait, {"decision":"block","reason":…};
                    with --hold DUR and none waiting, wait up to DUR for one
The hooks, the MCP server and the agent's shell commands act as one session
(see 'Agents' in docs/agents.md). An answer carries at most about 9,000
characters of whole messages; the rest waits for the next boundary, and a
longer message comes in numbered parts. Messages are acknowledged only
after the answer that completes them is written.
Nothing ever blocks the agent: on any problem (bad config, broker down,
empty or bad stdin) the hook prints one line on stderr and exits 0. For
gemini the answer is always JSON ({} when there is nothing to say): Gemini
CLI shows a hook's stderr to the user when its stdout is empty.
'intercom install claude|codex|gemini' writes these hooks into the settings.

Examples:
  echo '{"session_id":"abc","hook_event_name":"PostToolUse","tool_name":"Bash","cwd":"/src"}' | intercom hook claude PostToolUse
  echo '{"session_id":"abc","hook_event_name":"AfterTool","tool_name":"run_shell_command","cwd":"/src"}' | intercom hook gemini AfterTool`
}

// Run answers the hook. It always returns nil: a hook must never break the
// agent's turn (exit 2 would block a prompt or a tool), so every problem is
// one line on stderr.
func (h *HookCmd) Run(e *env) error {
	out := &countingWriter{w: e.stdout}
	e.stdout = out
	if err := h.run(e); err != nil {
		fmt.Fprintf(e.stderr, "intercom hook %s %s: %s\n", h.Harness, h.Event, render.OneLine(err.Error()))
	}
	if out.n == 0 && h.Harness == "gemini" {
		_, _ = out.Write(hooks.Empty)
	}
	return nil
}

// countingWriter counts what a hook wrote on stdout.
type countingWriter struct {
	w io.Writer
	n int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += n
	return n, err
}

func (h *HookCmd) run(e *env) error {
	event, err := hooks.Canonical(h.Harness, h.Event)
	if err != nil {
		return err
	}
	in, err := hooks.Parse(e.stdin)
	if err != nil {
		return err
	}
	// Only SessionStart may be a first use; any later event continues a
	// session, so a missing home was deleted under it: say so, start nothing.
	c, err := e.connectHome(event != hooks.SessionStart)
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
	write := func(block bool) func(string) error {
		return func(text string) error {
			out := hooks.ContextOutput(h.Event, text) // the harness's own event name
			if block {
				out = hooks.BlockOutput(text)
			}
			_, err := e.stdout.Write(out)
			return err
		}
	}
	switch event {
	case hooks.SessionStart:
		_, _ = c.SetState(e.ctx, sid, "idle", nil)
		intro := sessionIntro(b)
		wrote := false
		_, err := store.Deliver(e.ctx, c, sid, opts, func(text string) error {
			wrote = true
			return write(false)(intro + "\n\n" + text)
		})
		if !wrote && err == nil {
			err = write(false)(intro)
		}
		return err
	case hooks.UserPromptSubmit:
		_, _ = c.SetState(e.ctx, sid, "thinking", nil)
		_, err := store.Deliver(e.ctx, c, sid, opts, write(false))
		return err
	case hooks.PostToolUse:
		tool := strings.ReplaceAll(in.ToolName, " ", "_")
		if tool == "" {
			tool = "unknown"
		}
		_, _ = c.SetState(e.ctx, sid, "tool:"+tool, nil)
		_, err := store.Deliver(e.ctx, c, sid, opts, write(false))
		return err
	case hooks.Stop:
		// Idle releases queued messages; anything that would wake the agent
		// keeps it working. Once this turn was continued by us
		// (stop_hook_active), only the rest of a message already being
		// delivered in parts may continue it: a bounded number of times.
		_, _ = c.SetState(e.ctx, sid, "idle", nil)
		opts.WakeOnly, opts.ContinueOnly = true, in.StopHookActive
		blocked := false
		block := func(text string) error {
			blocked = true
			return write(true)(text)
		}
		_, err := store.Deliver(e.ctx, c, sid, opts, block)
		if err == nil && !blocked && h.Hold > 0 && !in.StopHookActive {
			err = holdForWake(e, c, store, sid, h.Hold, opts, block, func() bool { return blocked })
		}
		if blocked {
			_, _ = c.SetState(e.ctx, sid, "thinking", nil)
		}
		return err
	}
	return nil
}

// holdForWake waits up to d for a waking message to session and hands it
// to block (which sets what blocked reports); it returns with nothing when
// d passes.
func holdForWake(e *env, c *intercom.Client, store agentsession.Agents, sid string, d time.Duration, opts agentsession.DeliverOptions, block func(string) error, blocked func() bool) error {
	deadline := time.Now().Add(d)
	for left := d; left > 0 && !blocked(); left = time.Until(deadline) {
		res, err := c.WaitInbox(e.ctx, sid, left, true)
		if err != nil || !res.Ready {
			return err
		}
		if _, err := store.Deliver(e.ctx, c, sid, opts, block); err != nil {
			return err
		}
	}
	return nil
}

// sessionIntro is what SessionStart tells the model about intercom.
func sessionIntro(b agentsession.Binding) string {
	return introText(b) + nativeNote[b.Harness]
}

// nativeNote tells a harness's model how intercom stands beside the
// harness's own messaging, so that it sends each message one way and is
// not puzzled by the agent's second name.
var nativeNote = map[string]string{
	"claude": " Claude Code's own ListAgents/SendMessage are separate: they reach only Claude Code sessions, under their Claude names; intercom reaches the agents of every harness (Claude Code, Codex, Gemini CLI, Pi, ...) under the names `intercom list` shows. Send each message one way, never both.",
}

func introText(b agentsession.Binding) string {
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
