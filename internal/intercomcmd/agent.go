package intercomcmd

import (
	"strings"

	"github.com/intercom-dev/intercom/internal/agentsession"
	"github.com/intercom-dev/intercom/internal/render"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// renderer formats a message for an agent with the configured reply hint.
func (e *env) renderer() func(wire.Message) string {
	return func(m wire.Message) string { return render.ForAgent(m, e.cfg.ReplyHint) }
}

// joinable commands act as the agent's session when run by an agent
// without --session.
var joinable = map[string]bool{
	"send": true, "ask": true, "reply": true, "pending": true, "inbox": true, "state": true,
	"subscribe": true, "unsubscribe": true, "publish": true, "wait": true, "list": true, "status": true, "tool": true,
	"reserve": true, "release": true, "reservations": true,
}

// joinAgent sets --session to the agent's session when this command runs
// on behalf of an agent (package agentsession) and none was given.
func (e *env) joinAgent(command string) {
	if e.g.Session != "" || !joinable[strings.Fields(command + " x")[0]] {
		return
	}
	connect := func() (agentsession.Client, error) {
		c, err := e.connect()
		if err != nil {
			return nil, err // not a nil *intercom.Client in an interface
		}
		return c, nil
	}
	b, ok, err := agentsession.Open(e.home()).ForCommand(e.ctx, e.home(), connect)
	if err != nil {
		e.log.Warn("join the agent's session", "err", err)
	}
	if ok {
		e.g.Session = b.Session
	}
}
