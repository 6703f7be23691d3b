package intercomcmd

import (
	"fmt"

	"github.com/intercom-dev/intercom/internal/runs"
	"github.com/intercom-dev/intercom/internal/schema"
	"github.com/intercom-dev/intercom/internal/web"
	"github.com/intercom-dev/intercom/pkg/intercom"
)

// WebCmd serves the live web view.
type WebCmd struct {
	Port int    `default:"0" help:"Port on 127.0.0.1 (default: a free one)."`
	Name string `help:"Session name of the person at the page (default: your user name)." placeholder:"NAME"`
}

// Help shows examples.
func (WebCmd) Help() string {
	return `Serves a live view on 127.0.0.1 (never another address) and prints its URL,
which carries a random token: open it in a browser on this machine. The page
shows the sessions (state, project, model, resources held), a timeline of
the messages between them (each opens with its trace), conversations and
search over the history, topics and their records, supervised runs with
their questions (answerable from the page), and sends messages as you (a
session of its own, --name). Requests without the token, for another Host
or from another origin are refused. Stop it with Ctrl-C.

Examples:
  intercom web
  intercom web --port 8765 --name alice
  intercom web --json        # {"url": …} on one line, then serves`
}

// Run serves until interrupted.
func (w *WebCmd) Run(e *env) error {
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	name := w.Name
	if name == "" {
		name = defaultUIName()
	}
	person, err := c.Attach(e.ctx, intercom.AttachOptions{Name: name, Status: "idle"})
	if err != nil {
		return fmt.Errorf("web: session %s: %w", name, err)
	}
	ix, err := openSynced(e, c)
	if err != nil {
		return err
	}
	defer ix.Close()
	files := runs.Open(c.Home())
	desk := runs.Desk{Files: files, Connect: e.connect, Launch: runs.OwnerLauncher("", c.Home(), files)}
	srv, err := web.Listen(web.Options{Client: c, Person: person, Index: ix, Desk: desk, Port: w.Port, Log: e.log})
	if err != nil {
		return err
	}
	if e.g.JSON {
		if err := e.printJSON(schema.WebStarted{URL: srv.URL(), Session: person.ID()}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(e.stdout, "intercom web: open %s\n(as session %s; Ctrl-C stops)\n", srv.URL(), name)
	}
	return srv.Serve(e.ctx)
}
