package intercomcmd

import (
	"fmt"
	"github.com/intercom-dev/intercom/pkg/wire"

	"github.com/intercom-dev/intercom/internal/kongrun"
	"github.com/intercom-dev/intercom/internal/schema"
	"github.com/intercom-dev/intercom/internal/tty"
)

// ForgetCmd removes a disconnected session and its inbox.
type ForgetCmd struct {
	Target string `arg:"" help:"Session id, name or id prefix."`
	Yes    bool   `short:"y" help:"Do not ask for confirmation."`
}

// Help shows examples.
func (ForgetCmd) Help() string {
	return `Deletes a disconnected session and every undelivered message in its inbox.
Connected sessions are refused. Asks for confirmation on a terminal; without
a terminal --yes is required.

Examples:
  intercom forget old-worker --yes
  intercom forget 6332faab`
}

// Run forgets.
func (f *ForgetCmd) Run(e *env) error {
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	s, err := c.Find(e.ctx, f.Target)
	if _, _, remote := wire.SplitRemote(f.Target); err != nil && remote {
		// id@host of a session its host does not list (any more): the
		// broker drops what it left here (topic records, subscriptions).
		s, err = wire.Session{ID: f.Target, Name: f.Target}, nil
	}
	if err != nil {
		return fmt.Errorf("forget: %w", err)
	}
	if !f.Yes {
		if !tty.Is(e.stdin) {
			return kongrun.Usagef("forget %s: refusing without --yes (stdin is not a terminal)", f.Target)
		}
		if !e.confirm(fmt.Sprintf("Forget session %s (%s) and its undelivered messages?", s.Name, s.ID)) {
			return kongrun.Exit(1, "forget cancelled")
		}
	}
	if err := c.Forget(e.ctx, s.ID); err != nil {
		return fmt.Errorf("forget %s: %w", f.Target, err)
	}
	if e.g.JSON {
		return e.printJSON(schema.Forgot{Forgotten: s.ID, Name: s.Name})
	}
	fmt.Fprintf(e.stdout, "Forgot session %s (%s).\n", s.Name, s.ID)
	return nil
}
