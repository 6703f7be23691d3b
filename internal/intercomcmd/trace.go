package intercomcmd

import (
	"fmt"
	"time"
)

// TraceCmd shows a message's delivery timeline.
type TraceCmd struct {
	ID string `arg:"" help:"Message id (from send)."`
}

// Help shows examples.
func (TraceCmd) Help() string {
	return "Shows when a message was stored (accepted), pushed to a holder or fetched, and acknowledged (delivered to the agent).\n\nExamples:\n  intercom trace m3f2a9c1d0e8b7a6c5d4\n  intercom trace m3f2a9c1d0e8b7a6c5d4 --json"
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
	if tr.Stored.IsZero() {
		fmt.Fprintf(e.stdout, "message %s to %s: %s\n  stored    never (acknowledged before its send was committed)\n", tr.ID, tr.To, tr.State)
	} else {
		fmt.Fprintf(e.stdout, "message %s from %s to %s: %s\n  stored    %s\n", tr.ID, tr.From.Name, tr.To, tr.State, tr.Stored.Format(time.RFC3339Nano))
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
