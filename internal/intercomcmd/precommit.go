package intercomcmd

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/intercom-dev/intercom/internal/kongrun"
	"github.com/intercom-dev/intercom/internal/paths"
	"github.com/intercom-dev/intercom/internal/render"
	"github.com/intercom-dev/intercom/internal/reservations"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// OverrideEnv lets one commit through the pre-commit hook despite
// reservations; the override is logged.
const OverrideEnv = "INTERCOM_RESERVATIONS_OVERRIDE"

// overrideLog is where overrides are recorded, in the intercom home.
const overrideLog = "reservation-overrides.log"

// checkStaged is `reservations --staged`, run by the pre-commit hook: exit
// 1 naming each staged path another session holds, unless OverrideEnv is
// set (then it logs and passes). A broker that cannot be reached lets the
// commit through with a line on stderr: the hook never stands in the way
// of git for a failure of its own.
func (r *ReservationsCmd) checkStaged(e *env) error {
	cmd := exec.Command("git", "diff", "--cached", "--name-only", "--no-renames", "-z")
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("list staged paths: %w", err)
	}
	var staged []string
	for _, p := range bytes.Split(out, []byte{0}) {
		if len(p) > 0 {
			staged = append(staged, string(p))
		}
	}
	if len(staged) == 0 {
		return nil
	}
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	place := reservations.PlaceOf(cwd) // git runs the hook at the worktree root
	c, err := e.connect()
	if err != nil {
		fmt.Fprintf(e.stderr, "intercom pre-commit: reservations not checked: %s\n", render.OneLine(err.Error()))
		return nil
	}
	defer c.Close()
	self, _ := e.self(c)
	res, err := c.Reservations(e.ctx, wire.ReservationsRequest{SessionID: self, Project: place.Project, Check: staged})
	if err != nil {
		fmt.Fprintf(e.stderr, "intercom pre-commit: reservations not checked: %s\n", render.OneLine(err.Error()))
		return nil
	}
	if e.g.JSON {
		if err := e.printJSON(res); err != nil {
			return err
		}
	}
	if len(res.Blocked) == 0 {
		return nil
	}
	if os.Getenv(OverrideEnv) != "" {
		logOverride(e, self, place.Root, res.Blocked)
		fmt.Fprintf(e.stderr, "intercom pre-commit: %s set: committing %d reserved path(s) anyway (logged in %s)\n",
			OverrideEnv, len(res.Blocked), filepath.Join(e.home(), overrideLog))
		return nil
	}
	fmt.Fprintln(e.stderr, "intercom pre-commit: commit refused: it touches paths another session has reserved:")
	for _, b := range res.Blocked {
		fmt.Fprintf(e.stderr, "  %s\n", render.OneLine(b.String()))
	}
	fmt.Fprintf(e.stderr, "Ask the holder, unstage the paths, or override (logged): %s=1 git commit ...\n", OverrideEnv)
	return kongrun.Exit(1, "")
}

// logOverride appends one line per overridden path to the override log
// and to the broker's log through stderr's line above.
func logOverride(e *env, self, root string, blocked []wire.ReservationConflict) {
	home := e.home()
	if err := paths.EnsurePrivateDir(home); err != nil {
		fmt.Fprintf(e.stderr, "intercom pre-commit: override not logged: %s\n", render.OneLine(err.Error()))
		return
	}
	f, err := os.OpenFile(filepath.Join(home, overrideLog), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintf(e.stderr, "intercom pre-commit: override not logged: %s\n", render.OneLine(err.Error()))
		return
	}
	defer f.Close()
	who := self
	if who == "" {
		who = "(no session)"
	}
	var b strings.Builder
	for _, c := range blocked {
		fmt.Fprintf(&b, "%s override by %s in %s: %s held by %s (token %d)\n", time.Now().UTC().Format(time.RFC3339), who, root, c.Path, c.Held.Name, c.Held.Token)
	}
	_, _ = f.WriteString(b.String())
}
