package intercomcmd

import (
	"fmt"
	"io"
	"os"

	"github.com/intercom-dev/intercom/internal/hooks"
	"github.com/intercom-dev/intercom/internal/reservations"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// checkTool is `reservations --check-tool NAME`: the pre-tool decision for
// an extension (Pi's tool_call), on the tool input JSON on stdin, as this
// session, relative to the current directory. (The pre-tool hook itself is
// internal/hookcmd's.)
func (r *ReservationsCmd) checkTool(e *env) error {
	data, err := io.ReadAll(io.LimitReader(e.stdin, hooks.MaxInput+1))
	if err != nil {
		return fmt.Errorf("read tool input: %w", err)
	}
	var v wire.ReservationToolVerdict
	if len(reservations.ToolPaths(r.CheckTool, data)) > 0 {
		c, err := e.connect()
		if err != nil {
			return err
		}
		defer c.Close()
		self, err := e.self(c)
		if err != nil {
			return err
		}
		cwd, err := os.Getwd()
		if err != nil {
			return err
		}
		if v.Reason, err = reservations.Blocked(e.ctx, c, self, cwd, r.CheckTool, data); err != nil {
			return err
		}
		v.Block = v.Reason != ""
	}
	if e.g.JSON {
		return e.printJSON(v)
	}
	if v.Block {
		fmt.Fprintln(e.stdout, v.Reason)
	} else {
		fmt.Fprintln(e.stdout, "Not blocked.")
	}
	return nil
}
