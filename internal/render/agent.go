package render

import (
	"fmt"
	"strings"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// ForAgent is message m as an agent reads it (Message): in a hook's
// context, an MCP tool result, a plugin's or a rewake's output. With
// replyHint, an ask carries the two ways to answer it.
func ForAgent(m wire.Message, replyHint bool) string {
	var b strings.Builder
	hint := ""
	if replyHint {
		hint = fmt.Sprintf("To reply, use the intercom tool: intercom({ action: \"reply\", to: %q, message: \"...\" }) or run `intercom reply --to %s \"...\"`", m.ID, m.ID)
	}
	Message(&b, m, hint)
	return b.String()
}
