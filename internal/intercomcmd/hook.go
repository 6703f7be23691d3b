package intercomcmd

import (
	"fmt"
	"time"

	"github.com/intercom-dev/intercom/internal/render"

	"github.com/intercom-dev/intercom/internal/hooks"
)

// HookCmd answers a harness hook.
type HookCmd struct {
	Harness string `arg:"" help:"claude, codex or gemini."`
	Event   string `arg:"" help:"SessionStart, UserPromptSubmit, PostToolUse, Stop or PreToolUse (Gemini CLI: SessionStart, BeforeAgent, AfterTool, AfterAgent or BeforeTool)."`
	// Hold makes Stop wait for a waking message when none is there: the
	// only way to wake an idle Gemini CLI, which keeps its turn open (and
	// the user's typed input waiting) meanwhile.
	Hold time.Duration `help:"Stop/AfterAgent only: when no waking message waits, wait up to DUR for one and continue the turn with it (holds the turn open meanwhile; not after a continued turn, stop_hook_active)." zero:"do not wait" placeholder:"DUR"`
}

// Help shows examples.
func (HookCmd) Help() string {
	return `Reads the harness's hook JSON on stdin and answers on stdout per its
contract (Claude Code and Codex share it; Gemini CLI's is the same JSON
under the names BeforeAgent, AfterTool, AfterAgent and BeforeTool):
  SessionStart      join (register or resume) the agent's session, report idle
  UserPromptSubmit  report thinking; deliver waiting messages as additionalContext
  PostToolUse       report tool:<name>; deliver waiting messages as additionalContext
  Stop              report idle; if messages wait, continue the turn with them
                    (claude: Stop additionalContext; codex, gemini:
                    {"decision":"block","reason":…}); with --hold DUR and
                    none waiting, wait up to DUR for one
  PreToolUse        (gemini: BeforeTool) deny an edit of a path another
                    session reserved (docs/reservations.md)
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

// Run answers the hook (hooks.Run). It always returns nil: a hook must
// never break the agent's turn, so every problem is one line on stderr.
func (h *HookCmd) Run(e *env) error {
	if h.preTool() {
		if err := h.preToolUse(e); err != nil { // reservations (pretool.go)
			fmt.Fprintf(e.stderr, "intercom hook %s %s: %s\n", h.Harness, h.Event, render.OneLine(err.Error()))
		}
		return nil
	}
	hooks.Run(e.ctx, hooks.Call{Harness: h.Harness, Event: h.Event, Hold: h.Hold}, hooks.Env{
		Connect: e.connectHome, ReplyHint: e.cfg.ReplyHint, DigestBytes: int(e.cfg.DigestBytes),
		Stdin: e.stdin, Stdout: e.stdout, Stderr: e.stderr,
	})
	return nil
}
