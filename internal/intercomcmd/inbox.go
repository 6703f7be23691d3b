package intercomcmd

import (
	"bufio"
	"fmt"
	"time"

	"github.com/intercom-dev/intercom/internal/agentsession"
	"github.com/intercom-dev/intercom/internal/kongrun"
	"github.com/intercom-dev/intercom/internal/render"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// InboxCmd fetches and acknowledges undelivered messages.
type InboxCmd struct {
	Wait  time.Duration `zero:"do not wait" help:"When nothing is waiting, hold the session up to this long for a message (0, the default: do not wait)." placeholder:"DUR"`
	Limit int           `help:"At most this many messages (0: all)." default:"0"`
	Peek  bool          `help:"Show without acknowledging."`
}

// Help shows examples.
func (InboxCmd) Help() string {
	return `For harnesses that call a command at tool boundaries instead of holding
'attach': prints the messages waiting for --session (steer and passive now,
queued ones when the session is idle), oldest first, and acknowledges them.
With --json: {"messages":[...]} in the attach message shape.

Examples:
  intercom --session worker inbox
  intercom --session worker inbox --wait 30s --json`
}

// Run fetches.
func (in *InboxCmd) Run(e *env) error {
	if in.Limit < 0 {
		return kongrun.Usagef("--limit must be >= 0")
	}
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	self, err := e.needSelf(c, "inbox")
	if err != nil {
		return err
	}
	if in.Wait > 0 {
		if _, err := waitOne(e, c, self, in.Wait); err != nil {
			return err
		}
	}
	// The agent's other deliverers (hooks, MCP server, wait) take the same
	// lock: a message is handed over by one of them only.
	_, err = agentsession.Open(c.Home()).DeliverWhole(e.ctx, c, self, agentsession.WholeOptions{Limit: in.Limit, Peek: in.Peek}, func(msgs []wire.Message) error {
		out := bufio.NewWriter(e.stdout)
		if e.g.JSON {
			page := messagesJSON(msgs)
			for i := range page.Messages { // what a model is shown (an extension hands it over)
				page.Messages[i].Rendered = render.ForAgent(msgs[i], e.cfg.ReplyHint)
			}
			_ = kongrun.PrintJSON(out, page)
		} else if len(msgs) == 0 {
			fmt.Fprintln(out, "No messages.")
		}
		if !e.g.JSON {
			for _, m := range msgs {
				render.Message(out, m, e.replyHint(e.g.Session, m))
			}
		}
		if err := out.Flush(); err != nil {
			return fmt.Errorf("write messages: %w", err)
		}
		return nil
	})
	return err
}

// waitOne waits up to d for a deliverable message and fetches it.
func waitOne(e *env, c *intercom.Client, id string, d time.Duration) ([]wire.Message, error) {
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return nil, nil
		}
		ready, err := c.InboxWait(e.ctx, id, left, false)
		if err != nil {
			return nil, fmt.Errorf("wait for messages: %w", err)
		}
		if !ready {
			return nil, nil
		}
		msgs, err := c.Inbox(e.ctx, id, 0)
		if err != nil || len(msgs) > 0 {
			return msgs, err
		}
	}
}
