package intercomcmd

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/intercom-dev/intercom/internal/render"
	"github.com/intercom-dev/intercom/internal/schema"
	"github.com/intercom-dev/intercom/pkg/intercom"
)

// ReplyCmd answers an inbound ask.
type ReplyCmd struct {
	Message []string `arg:"" help:"Reply text ('-' reads stdin)."`
	To      string   `help:"Which ask: its reply id (from pending), or the asker's name/target." placeholder:"T"`
	MessageFlags
}

// Help shows examples.
func (ReplyCmd) Help() string {
	return `Answers the single unresolved inbound ask of --session; with several, --to
picks one (by reply id or asker), else the candidates are listed.

Examples:
  intercom --session worker reply "Yes, validate() now rejects null."
  intercom --session worker reply --to m3f2a9c1d0e8b7a6c5d4 "Done."
  intercom --session worker reply --to planner "Step 2 finished."`
}

// Run replies.
func (r *ReplyCmd) Run(e *env) error {
	text, err := messageText(e, r.Message)
	if err != nil {
		return err
	}
	att, err := r.attachments(text)
	if err != nil {
		return err
	}
	if err := checkMessage(text, att); err != nil {
		return err
	}
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	self, err := e.needSelf(c, "reply")
	if err != nil {
		return err
	}
	a, res, err := c.Reply(e.ctx, self, r.To, text, att)
	var many *intercom.AmbiguousAskError
	switch {
	case errors.Is(err, intercom.ErrNoAsk) && r.To != "":
		return fmt.Errorf("no pending ask matches %q (see `intercom --session %s pending`)", r.To, shellQuote(e.g.Session))
	case errors.As(err, &many):
		return fmt.Errorf("Multiple pending asks — specify --to: %s", many.Choices(render.Line))
	case err != nil && a.AskID != "":
		return fmt.Errorf("reply to %s: %w", a.From.Name, err)
	case err != nil:
		return err
	}
	if e.g.JSON {
		return e.printJSON(schema.Reply{ID: res.ID, ReplyTo: a.AskID, To: res.To})
	}
	fmt.Fprintf(e.stdout, "Reply %s sent to %s (answering %s).\n", res.ID, a.From.Name, a.AskID)
	return nil
}

// PendingCmd lists unresolved inbound asks.
type PendingCmd struct{}

// Help shows examples.
func (PendingCmd) Help() string {
	return `Lists the asks waiting for an answer from --session, oldest first, each
with sender, age, reply id and a ready-to-run reply command.

Examples:
  intercom --session worker pending
  intercom --session worker pending --json`
}

// Run lists.
func (p *PendingCmd) Run(e *env) error {
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	self, err := e.needSelf(c, "pending")
	if err != nil {
		return err
	}
	asks, err := c.Pending(e.ctx, self)
	if err != nil {
		return err
	}
	rows := make([]schema.PendingAsk, 0, len(asks))
	for _, a := range asks {
		cmd := fmt.Sprintf("intercom --session %s reply --to %s \"...\"", shellQuote(e.g.Session), a.AskID)
		rows = append(rows, schema.PendingAsk{PendingAsk: a, AgeSeconds: int(time.Since(a.SentAt).Seconds()), ReplyCommand: cmd})
	}
	if e.g.JSON {
		return e.printJSON(schema.Pending{Asks: rows})
	}
	if len(rows) == 0 {
		fmt.Fprintln(e.stdout, "No pending asks.")
		return nil
	}
	for _, r := range rows {
		t := r.SentAt
		preview := strings.ReplaceAll(r.Text, "\n", " ")
		if len(preview) > 200 {
			preview = preview[:200] + "…"
		}
		fmt.Fprintf(e.stdout, "• from %s (%s), %s — replyTo: %s\n  %s\n  reply: %s\n", render.Line(r.From.Name), render.Line(r.FromTarget), render.Ago(&t), render.Line(r.AskID), render.Line(preview), render.Line(r.ReplyCommand))
	}
	return nil
}
