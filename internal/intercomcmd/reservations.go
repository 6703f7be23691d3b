package intercomcmd

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/intercom-dev/intercom/internal/kongrun"
	"github.com/intercom-dev/intercom/internal/render"
	"github.com/intercom-dev/intercom/internal/reservations"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// ReserveCmd takes leases on paths of the project.
type ReserveCmd struct {
	Paths  []string      `arg:"" help:"Files, directories or globs (*, ?, **), relative to here or absolute, inside this project."`
	Shared bool          `help:"A shared lease: other shared holders may hold the path too; an exclusive request is refused."`
	TTL    time.Duration `name:"ttl" help:"How long the lease lasts without the holder's activity (default 30m; renewed by activity and by reserving again)." placeholder:"DUR"`
	Reason string        `help:"What the lease is for: shown to whoever is refused." placeholder:"TEXT"`
}

// Help shows examples.
func (ReserveCmd) Help() string {
	return `Grants every path or none. A path is relative to the project (the git
worktree root, so the worktrees of one repository share reservations).
Exclusive unless --shared. Each grant carries a fencing token, greater than
every earlier one; reserving a path again renews the lease and keeps its
token. A lease ends on 'release', at expiry (TTL after the holder's last
activity), or a grace period after the holder's session disconnected. While
another session holds a path, its edit tools refuse to edit it (Claude Code,
Codex and Pi hooks) and the pre-commit hook ('intercom install git-hook')
refuses to commit it. Exit 1 when refused: each conflict is named on stderr
with its holder, reason, age and how to ask it.

Examples:
  intercom reserve internal/store/keys.go --reason "changing the key layout"
  intercom reserve 'docs/**' --ttl 2h
  intercom reserve README.md --shared --json`
}

// Run reserves.
func (r *ReserveCmd) Run(e *env) error {
	if r.TTL < 0 || r.TTL > wire.MaxReservationTTL {
		return kongrun.Usagef("--ttl %s out of range (up to %s)", r.TTL, wire.MaxReservationTTL)
	}
	place, paths, err := reservationPaths(r.Paths)
	if err != nil {
		return err
	}
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	self, err := e.needSelf(c, "reserve")
	if err != nil {
		return err
	}
	res, err := c.Reserve(e.ctx, wire.ReserveRequest{SessionID: self, Project: place.Project, Paths: paths, Shared: r.Shared, TTL: r.TTL, Reason: r.Reason})
	if err != nil {
		return fmt.Errorf("reserve: %w", err)
	}
	if len(res.Refused) > 0 {
		if e.g.JSON {
			if err := e.printJSON(res); err != nil {
				return err
			}
		}
		for _, c := range res.Refused {
			fmt.Fprintf(e.stderr, "intercom reserve: refused: %s\n", render.OneLine(c.String()))
		}
		return kongrun.Exit(1, "")
	}
	if e.g.JSON {
		return e.printJSON(res)
	}
	for _, g := range res.Granted {
		fmt.Fprintf(e.stdout, "Reserved %s (%s, token %d, expires %s without activity).\n", g.Path, leaseKind(g.Shared), g.Token, g.Expires.Local().Format(time.Kitchen))
	}
	return nil
}

func leaseKind(shared bool) string {
	if shared {
		return "shared"
	}
	return "exclusive"
}

// reservationPaths resolves command-line paths to reservation paths of the
// current directory's project.
func reservationPaths(args []string) (reservations.Place, []string, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return reservations.Place{}, nil, err
	}
	place, paths, err := reservations.ResolveAll(cwd, args)
	return place, paths, kongrun.Usage(err)
}

// ReleaseCmd lets go of leases.
type ReleaseCmd struct {
	Paths []string `arg:"" optional:"" help:"Paths reserved before (as given to reserve)."`
	All   bool     `help:"Every lease this session holds, in every project."`
}

// Help shows examples.
func (ReleaseCmd) Help() string {
	return `Ends this session's leases at once (they also end at expiry, and a grace
period after the session disconnects). The next grant of a path gets a
greater token.

Examples:
  intercom release internal/store/keys.go
  intercom release --all --json`
}

// Run releases.
func (r *ReleaseCmd) Run(e *env) error {
	if r.All == (len(r.Paths) > 0) {
		return kongrun.Usagef("release: name the paths or --all, not both")
	}
	req := wire.ReleaseRequest{All: r.All}
	if !r.All {
		place, paths, err := reservationPaths(r.Paths)
		if err != nil {
			return err
		}
		req.Project, req.Paths = place.Project, paths
	}
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	if req.SessionID, err = e.needSelf(c, "release"); err != nil {
		return err
	}
	res, err := c.Release(e.ctx, req)
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	if e.g.JSON {
		return e.printJSON(res)
	}
	if len(res.Released) == 0 {
		fmt.Fprintln(e.stdout, "Nothing to release.")
	}
	for _, g := range res.Released {
		fmt.Fprintf(e.stdout, "Released %s (token %d).\n", g.Path, g.Token)
	}
	return nil
}

// ReservationsCmd shows, checks and traces leases.
type ReservationsCmd struct {
	Path      string `arg:"" optional:"" help:"Only the leases covering this path."`
	All       bool   `help:"Every project, not only this one."`
	Check     string `help:"Exit 1 unless PATH is free for this session (no other session holds it); with --token, unless N is the current grant covering PATH." placeholder:"PATH"`
	Token     uint64 `help:"With --check: the fencing token to check." placeholder:"N"`
	History   string `help:"The grants and releases of PATH, oldest first." placeholder:"PATH"`
	CheckTool string `name:"check-tool" help:"(harness extensions) read the input JSON of a call of tool NAME on stdin and answer {block, reason}: whether it would edit a path another session holds. Exit 0 either way." placeholder:"NAME"`
	Staged    bool   `help:"(the pre-commit hook) exit 1 naming each path staged for commit that another session holds; INTERCOM_RESERVATIONS_OVERRIDE=1 lets it through, logged."`
}

// Help shows examples.
func (ReservationsCmd) Help() string {
	return `Lists the live leases of this project: path, holder, kind, token, age,
expiry and reason. --check answers for one path: exit 0 when this session
may edit it (free, or held by this session), 1 when another session holds
it; with --token N, exit 0 only while N is the current grant covering it,
so a CI step or a tool can refuse a write from a holder whose lease lapsed.
--history shows the path's timeline (grant, release, expire, gone).

Examples:
  intercom reservations
  intercom reservations internal/store --json
  intercom reservations --check internal/store/keys.go --token 7
  intercom reservations --history internal/store/keys.go
  intercom install git-hook   # pre-commit runs: intercom reservations --staged
  echo '{"path":"a.go"}' | intercom reservations --check-tool edit --json   # Pi's tool_call`
}

// Run shows reservations.
func (r *ReservationsCmd) Run(e *env) error {
	if r.Staged {
		return r.checkStaged(e)
	}
	if r.CheckTool != "" {
		return r.checkTool(e)
	}
	if r.Token != 0 && r.Check == "" {
		return kongrun.Usagef("--token goes with --check PATH")
	}
	var args []string
	for _, p := range []string{r.Path, r.Check, r.History} {
		if p != "" {
			args = append(args, p)
		}
	}
	place, paths, err := reservationPaths(args)
	if err != nil {
		return err
	}
	req := wire.ReservationsRequest{Project: place.Project, Token: r.Token}
	for _, p := range []*string{&r.Path, &r.Check, &r.History} {
		if *p != "" {
			*p, paths = paths[0], paths[1:]
		}
	}
	req.Path, req.History = r.Path, r.History
	if r.Check != "" {
		req.Check = []string{r.Check}
	}
	if r.All {
		req.Project = ""
	}
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	if req.SessionID, err = e.self(c); err != nil && r.Check != "" {
		return err
	}
	res, err := c.Reservations(e.ctx, req)
	if err != nil {
		return fmt.Errorf("reservations: %w", err)
	}
	if e.g.JSON {
		if err := e.printJSON(res); err != nil {
			return err
		}
	}
	switch {
	case r.History != "":
		if !e.g.JSON {
			printReservationHistory(e, r.History, res.History)
		}
	case r.Check != "":
		return checkOutcome(e, r, res)
	case !e.g.JSON:
		printReservations(e, res.Reservations)
	}
	return nil
}

// checkOutcome reports --check: exit 1 when blocked or the token is stale.
func checkOutcome(e *env, r *ReservationsCmd, res wire.ReservationsReply) error {
	if len(res.Blocked) > 0 {
		if !e.g.JSON {
			fmt.Fprintf(e.stderr, "intercom reservations: %s\n", render.OneLine(res.Blocked[0].String()))
		}
		return kongrun.Exit(1, "")
	}
	if r.Token != 0 && !res.Current {
		if !e.g.JSON {
			fmt.Fprintf(e.stderr, "intercom reservations: token %d is not the current grant of %s\n", r.Token, r.Check)
		}
		return kongrun.Exit(1, "")
	}
	if !e.g.JSON {
		if r.Token != 0 {
			fmt.Fprintf(e.stdout, "Token %d is current for %s.\n", r.Token, r.Check)
		} else {
			fmt.Fprintf(e.stdout, "%s is free for this session.\n", r.Check)
		}
	}
	return nil
}

func printReservations(e *env, rs []wire.ReservationInfo) {
	if len(rs) == 0 {
		fmt.Fprintln(e.stdout, "No reservations.")
		return
	}
	fmt.Fprintf(e.stdout, "%-32s %-20s %-9s %6s %8s %s\n", "PATH", "HOLDER", "KIND", "TOKEN", "AGE", "REASON")
	for _, r := range rs {
		holder := r.Name
		if !r.Connected {
			holder += " (gone)"
		}
		fmt.Fprintf(e.stdout, "%-32s %-20s %-9s %6d %8s %s\n", r.Path, holder, leaseKind(r.Shared), r.Token,
			time.Since(r.Granted).Round(time.Second), render.OneLine(r.Reason))
	}
}

func printReservationHistory(e *env, p string, evs []wire.ReservationEvent) {
	if len(evs) == 0 {
		fmt.Fprintf(e.stdout, "No history for %s.\n", p)
		return
	}
	for _, ev := range evs {
		fmt.Fprintf(e.stdout, "%s  %-8s %-20s token %d %s\n", ev.At.Local().Format(time.RFC3339), ev.Event, ev.Name, ev.Token, render.OneLine(ev.Reason))
	}
}

// printHolds adds to list what each listed session holds in this project.
func (e *env) printHolds(c *intercom.Client, rows []wire.Session) {
	cwd, err := os.Getwd()
	if err != nil {
		return
	}
	held := reservations.HeldBy(e.ctx, c, cwd)
	for _, s := range rows {
		if paths := held[s.ID]; len(paths) > 0 {
			fmt.Fprintf(e.stdout, "  %s holds %s\n", render.OneLine(s.Name), render.OneLine(strings.Join(paths, ", ")))
		}
	}
}
