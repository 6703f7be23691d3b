package intercomcmd

import (
	"fmt"
	"github.com/intercom-dev/intercom/pkg/wire"
	"strings"

	"github.com/intercom-dev/intercom/internal/kongrun"
)

// StateCmd reports a held session's lifecycle.
type StateCmd struct {
	Status      string `arg:"" help:"idle, thinking or tool:NAME."`
	AcceptsAsks *bool  `name:"accepts-asks" negatable:"" help:"Whether the session accepts blocking asks now (default: only when idle)."`
	Suffix      string `help:"Custom status suffix (default: config 'status')." placeholder:"TEXT"`
}

// Help shows examples.
func (StateCmd) Help() string {
	return `The harness holding a session reports what it is doing; list shows it and
queued messages are released when the session reports idle.

Examples:
  intercom --session worker state thinking
  intercom --session worker state tool:bash
  intercom --session worker state idle
  intercom --session worker state thinking --accepts-asks`
}

// Run reports state.
func (s *StateCmd) Run(e *env) error {
	status := s.Status
	if err := wire.ValidateStatus(status); err != nil || strings.Contains(status, " · ") {
		return kongrun.Usagef("invalid status %q: want idle, thinking or tool:NAME", status)
	}
	suffix := s.Suffix
	if suffix == "" {
		suffix = e.cfg.Status
	}
	if suffix != "" {
		status += " · " + suffix
	}
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	id, err := e.needSelf(c, "state")
	if err != nil {
		return err
	}
	row, err := c.SetState(e.ctx, id, status, s.AcceptsAsks)
	if err != nil {
		return err
	}
	if e.g.JSON {
		return e.printJSON(row)
	}
	fmt.Fprintf(e.stdout, "%s: %s (state %s, accepts_asks %t)\n", row.Name, row.Status, row.State, row.AcceptsAsks)
	return nil
}
