package intercomcmd

import (
	"fmt"

	"github.com/intercom-dev/intercom/internal/render"
	"github.com/intercom-dev/intercom/internal/render/sessiontable"
	"github.com/intercom-dev/intercom/internal/schema"
	"github.com/intercom-dev/intercom/internal/tty"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// ListCmd lists sessions.
type ListCmd struct {
	Scope string `enum:"project,all" default:"project" help:"project: this git repository and its worktrees; all: every session."`
	All   bool   `help:"Include disconnected sessions (their inboxes still receive)."`
}

// Help shows examples.
func (ListCmd) Help() string {
	return `On a terminal: an aligned table (name, target, status, project, pending
asks, last intercom activity) and the delivery guidance once; colour unless
NO_COLOR is set. Piped or redirected: one line per session with name, target
(what to pass to send/ask), cwd, model, status and the health tags state,
accepts_asks, pending_asks, last_intercom_activity and last_seen, each with
its guidance line. With --json: {"sessions":[{id,name,target,cwd,project,status,state,
accepts_asks,pending_asks,last_intercom_activity,last_seen,connected,...}]}.

Examples:
  intercom list
  intercom list --scope all --all
  intercom --session planner list --json`
}

// Run lists.
func (l *ListCmd) Run(e *env) error {
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	_, rows, err := e.sessions(c, intercom.ListOptions{Scope: l.Scope, IncludeDisconnected: l.All})
	if err != nil {
		return err
	}
	if e.g.JSON {
		return e.printJSON(wire.ListReply{Sessions: rows})
	}
	e.printSessions(rows)
	e.printHolds(c, rows)
	return nil
}

// sessions lists the sessions as --session (when set) sees them, and
// returns its id with them.
func (e *env) sessions(c *intercom.Client, o intercom.ListOptions) (string, []wire.Session, error) {
	self, err := e.self(c)
	if err != nil {
		return "", nil, err
	}
	o.Self = self
	rows, err := c.List(e.ctx, o)
	return self, rows, err
}

// printSessions shows rows as an aligned table to a person at a terminal
// (colour unless NO_COLOR), else in the line format agents and scripts read.
func (e *env) printSessions(rows []wire.Session) {
	if tty.Is(e.stdout) {
		sessiontable.Print(e.stdout, rows, sessiontable.Options{Colour: tty.Colour(e.stdout), Width: tty.Width(e.stdout)})
		return
	}
	render.Sessions(e.stdout, rows)
}

// StatusCmd shows the connection and sessions.
type StatusCmd struct {
	Scope string `enum:"project,all" default:"project" help:"Which sessions to show."`
}

// Help shows examples.
func (StatusCmd) Help() string {
	return `Shows whether the broker answers, this session's id, its undelivered inbox
count, and the same rows as list.

Examples:
  intercom status
  intercom --session worker status --json`
}

// Run shows status.
func (s *StatusCmd) Run(e *env) error {
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	self, rows, err := e.sessions(c, intercom.ListOptions{Scope: s.Scope})
	if err != nil {
		return err
	}
	active := 0
	var me *wire.Session
	for i := range rows {
		if rows[i].Connected {
			active++
		}
		if rows[i].Self {
			me = &rows[i]
		}
	}
	queued := 0
	if self != "" {
		msgs, err := c.Peek(e.ctx, self, 0)
		if err != nil {
			return err
		}
		queued = len(msgs)
	}
	if e.g.JSON {
		return e.printJSON(schema.Status{
			Connected: true, SessionID: self, Session: me, ActiveSessions: active,
			QueuedInbound: queued, Socket: c.Socket(), Home: c.Home(), Sessions: rows,
		})
	}
	id := self
	if id == "" {
		id = "(none; pass --session)"
	}
	fmt.Fprintf(e.stdout, "Connected: Yes, Session ID: %s, Active sessions: %d, Queued inbound: %d\nBroker socket: %s\n", id, active, queued, c.Socket())
	e.printSessions(rows)
	return nil
}
