package agentsession

import "fmt"

// Intro is what an agent's model is told about intercom when its session
// starts (a SessionStart hook, a plugin's first turn): which session it is
// and how to reach the others.
func Intro(b Binding) string {
	return fmt.Sprintf("intercom: this agent is the intercom session %q (id %s). Other agent sessions on this machine can message you; their messages appear here at tool boundaries. "+
		"Your shell commands act as this session with no --session: `intercom list` shows the others, `intercom send TARGET \"...\"` messages one (steer: it reaches them at their next tool boundary), "+
		"`intercom ask TARGET \"...\"` waits for an answer, `intercom reply \"...\"` answers an ask. The intercom MCP tool, if present, is the same session.", b.Name, b.Session) + nativeNote[b.Harness]
}

// nativeNote tells a harness's model how intercom stands beside the
// harness's own messaging, so that it sends each message one way and is
// not puzzled by the agent's second name.
var nativeNote = map[string]string{
	"claude": " Claude Code's own ListAgents/SendMessage are separate: they reach only Claude Code sessions, under their Claude names; intercom reaches the agents of every harness (Claude Code, Codex, Gemini CLI, Pi, ...) under the names `intercom list` shows. Send each message one way, never both.",
}
