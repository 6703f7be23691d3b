package intercomcmd

import (
	"fmt"
	"time"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// TraceCmd shows a message's delivery timeline.
type TraceCmd struct {
	ID string `arg:"" help:"Message id (from send)."`
}

// Help shows examples.
func (TraceCmd) Help() string {
	return "Shows when a message was held for a person's approval and approved or refused (inbound hold), stored (accepted), pushed to a holder or fetched, and acknowledged (delivered to the agent).\n\nExamples:\n  intercom trace m3f2a9c1d0e8b7a6c5d4\n  intercom trace m3f2a9c1d0e8b7a6c5d4 --json"
}

// Run traces.
func (t *TraceCmd) Run(e *env) error {
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	tr, err := c.Trace(e.ctx, t.ID)
	if err != nil {
		return err
	}
	if e.g.JSON {
		return e.printJSON(tr)
	}
	at := func(t time.Time) string { // absolute, and since stored when it was
		if tr.Stored.IsZero() {
			return t.Format(time.RFC3339Nano)
		}
		return fmt.Sprintf("%s (+%s)", t.Format(time.RFC3339Nano), t.Sub(tr.Stored))
	}
	from := tr.From.Name
	if tr.FromPerson {
		from += " (person)"
	}
	switch {
	case tr.State == wire.TraceHeld || tr.State == wire.TraceRefused:
		fmt.Fprintf(e.stdout, "message %s from %s to %s: %s\n  held      %s (waiting for a person's approval: intercom held)\n", tr.ID, from, tr.To, tr.State, tr.HeldAt.Format(time.RFC3339Nano))
		if tr.DecidedAt != nil {
			fmt.Fprintf(e.stdout, "  %-9s %s (never delivered; nothing was stored)\n", tr.Decision, tr.DecidedAt.Format(time.RFC3339Nano))
		}
		return nil
	case tr.Stored.IsZero():
		fmt.Fprintf(e.stdout, "message %s to %s: %s\n  stored    never (acknowledged before its send was committed)\n", tr.ID, tr.To, tr.State)
	default:
		fmt.Fprintf(e.stdout, "message %s from %s to %s: %s\n", tr.ID, from, tr.To, tr.State)
		if tr.HeldAt != nil && tr.DecidedAt != nil {
			fmt.Fprintf(e.stdout, "  held      %s\n  %-9s %s\n", tr.HeldAt.Format(time.RFC3339Nano), tr.Decision, tr.DecidedAt.Format(time.RFC3339Nano))
		}
		fmt.Fprintf(e.stdout, "  stored    %s\n", tr.Stored.Format(time.RFC3339Nano))
	}
	for _, p := range tr.Pushed {
		fmt.Fprintf(e.stdout, "  pushed    %s\n", at(p))
	}
	for _, f := range tr.Fetched {
		fmt.Fprintf(e.stdout, "  fetched   %s\n", at(f))
	}
	if tr.Acked != nil {
		fmt.Fprintf(e.stdout, "  delivered %s\n", at(*tr.Acked))
	}
	return nil
}
