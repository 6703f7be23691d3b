package intercomcmd

import (
	"fmt"
	"strings"
	"time"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// HeldCmd lists the messages held for a person's decision, and approves or
// refuses them.
type HeldCmd struct {
	List    HeldListCmd   `cmd:"" default:"withargs" help:"List held messages (the default)."`
	Approve HeldDecideCmd `cmd:"" help:"Deliver a held message to its recipient."`
	Refuse  HeldRefuseCmd `cmd:"" help:"Refuse a held message: it is never delivered."`
}

// Help shows examples.
func (HeldCmd) Help() string {
	return `A session whose config.json "inbound" setting is "hold" keeps messages
from the senders it does not accept until a person approves or refuses each
one. Held messages never expire; their senders see "held" in their receipt
and in trace, then "delivered" or "refused". Only a person decides: approve
and refuse are refused when run by an agent.

Examples:
  intercom held
  intercom held --to reviewer --json
  intercom held approve m3f2a9c1d0e8b7a6c5d4
  intercom held refuse m3f2a9c1d0e8b7a6c5d4`
}

// HeldListCmd lists held messages.
type HeldListCmd struct {
	To string `help:"Only messages to this session (name, id or id prefix)." placeholder:"SESSION"`
}

// Run lists.
func (h *HeldListCmd) Run(e *env) error {
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	held, err := c.Held(e.ctx, h.To)
	if err != nil {
		return fmt.Errorf("held: %w", err)
	}
	if e.g.JSON {
		return e.printJSON(wire.HeldReply{Held: held})
	}
	if len(held) == 0 {
		fmt.Fprintln(e.stdout, "No messages are held.")
		return nil
	}
	for _, m := range held {
		fmt.Fprintf(e.stdout, "%s  %s → %s  held %s\n  %s\n", m.Message.ID, senderLabel(m.Message), m.ToName,
			m.HeldAt.Local().Format(time.DateTime), oneLine(m.Message.Text, 200))
	}
	fmt.Fprintf(e.stdout, "%d held. Approve with `intercom held approve ID`, refuse with `intercom held refuse ID`.\n", len(held))
	return nil
}

// HeldDecideCmd approves a held message.
type HeldDecideCmd struct {
	ID string `arg:"" help:"Held message id (from intercom held)."`
}

// Run approves.
func (h *HeldDecideCmd) Run(e *env) error { return decideHeld(e, h.ID, true) }

// HeldRefuseCmd refuses a held message.
type HeldRefuseCmd struct {
	ID string `arg:"" help:"Held message id (from intercom held)."`
}

// Run refuses.
func (h *HeldRefuseCmd) Run(e *env) error { return decideHeld(e, h.ID, false) }

func decideHeld(e *env, id string, approve bool) error {
	verb := map[bool]string{true: "approve", false: "refuse"}[approve]
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	by, err := e.sender(c)
	if err != nil {
		return err
	}
	res, err := c.DecideHeld(e.ctx, by, id, approve)
	if err != nil {
		return fmt.Errorf("held %s %s: %w", verb, id, err)
	}
	if e.g.JSON {
		return e.printJSON(res)
	}
	if approve {
		fmt.Fprintf(e.stdout, "Message %s approved: stored for %s and delivered like any message.\n", res.ID, res.To)
	} else {
		fmt.Fprintf(e.stdout, "Message %s refused: it is never delivered to %s; its sender's trace says refused.\n", res.ID, res.To)
	}
	return nil
}

// senderLabel is a message's sender, "(person)" after a person's name.
func senderLabel(m wire.Message) string {
	if m.FromPerson {
		return m.From.Name + " (person)"
	}
	return m.From.Name
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len([]rune(s)) > n {
		return string([]rune(s)[:n]) + "…"
	}
	return s
}

// Help shows examples.
func (HeldListCmd) Help() string {
	return "Lists the messages held for a person's approval, oldest first.\n\nExamples:\n  intercom held list\n  intercom held --to reviewer --json"
}

// Help shows examples.
func (HeldDecideCmd) Help() string {
	return "Stores and delivers a held message, exactly once. Only a person may approve (exit 1 from an agent).\n\nExamples:\n  intercom held approve m3f2a9c1d0e8b7a6c5d4"
}

// Help shows examples.
func (HeldRefuseCmd) Help() string {
	return "Refuses a held message: it is never delivered and its sender's trace says refused. Only a person may refuse.\n\nExamples:\n  intercom held refuse m3f2a9c1d0e8b7a6c5d4"
}
