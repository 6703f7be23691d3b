package intercomcmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/intercom-dev/intercom/internal/agentsession"
	"github.com/intercom-dev/intercom/internal/pluginhost"
	"github.com/intercom-dev/intercom/pkg/intercom"
)

// OpencodeCmd holds one OpenCode session's intercom session for the
// OpenCode plugin (integrations/opencode), over JSON lines.
type OpencodeCmd struct {
	Session string `name:"opencode-session" required:"" help:"OpenCode's session id (ses_…); the intercom session is oc-<id>." placeholder:"ID"`
	Cwd     string `help:"Working directory to report." placeholder:"DIR"`
	Name    string `help:"Session name (default: $$INTERCOM_NAME, else opencode-<directory>)." placeholder:"NAME"`
}

// Help shows examples.
func (OpencodeCmd) Help() string {
	return `Started by the OpenCode plugin ('intercom install opencode') once per
OpenCode session: registers (or resumes) the intercom session oc-<id>, holds
it while its stdin is open, and speaks JSON lines (package pluginhost):
it reports the session's state, says when a waking message waits and hands
messages over, acknowledging them only after the plugin confirms the model
got the text. One OpenCode process with several sessions runs one of these
for each, so each has its own inbox and identity.

Examples:
  intercom opencode --opencode-session ses_4f1c2d --cwd /src/api`
}

// Run holds the session until stdin ends.
func (o *OpencodeCmd) Run(e *env) error {
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	cwd := o.Cwd
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	name := o.Name
	if name == "" {
		name = os.Getenv("INTERCOM_NAME")
	}
	if name == "" {
		name = agentsession.DefaultName("opencode", cwd)
	}
	id := agentsession.SessionID("opencode", o.Session)
	s, err := c.Attach(e.ctx, intercom.AttachOptions{RequestID: id, Exact: true, Name: name, Cwd: cwd, NoDeliver: true})
	if errors.Is(err, intercom.ErrHeld) {
		return fmt.Errorf("session %s is held by another process (another opencode running this session?): %w", id, err)
	}
	if err != nil {
		return err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = s.Detach(ctx)
	}()
	h := pluginhost.Host{
		Client: c, Session: s, Agents: agentsession.Open(c.Home()), Render: e.renderer(), Budget: int(e.cfg.DigestBytes), Log: e.log,
		Intro: agentsession.Intro(agentsession.Binding{Session: s.ID(), Name: s.Info().Name}),
	}
	return h.Serve(e.ctx, e.stdin, e.stdout)
}
