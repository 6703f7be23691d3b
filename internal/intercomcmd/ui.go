package intercomcmd

import (
	"fmt"
	"os"
	"os/user"
	"regexp"
	"strings"

	"github.com/intercom-dev/intercom/internal/kongrun"
	"github.com/intercom-dev/intercom/internal/runs"
	"github.com/intercom-dev/intercom/internal/tty"
	"github.com/intercom-dev/intercom/internal/ui"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// UICmd runs the terminal UI.
type UICmd struct {
	Name string `help:"Session name of the UI (default: your user name)." placeholder:"NAME"`
	Cwd  string `help:"Directory whose project the session list shows (default: current)." placeholder:"DIR" type:"path"`
}

// Help shows the keys.
func (UICmd) Help() string {
	return `Watch and talk to your agent sessions from one terminal. The UI holds a
session of its own (--name, default your user name) while it runs and
acknowledges the messages it shows.

Keys: ↑/↓ select · Enter compose to the selected session · Tab toggles Send /
Request Reply · Enter sends (alt+enter or ctrl+j inserts a newline) · ctrl+a
attaches a file · Esc cancels · a toggles this project / all sessions ·
r replies to the newest unanswered ask · alt+shift+m (config "shortcut")
toggles the conversations view · t topics · u runs · q quits.
NO_COLOR=1 turns colour off. See docs/ui.md.

Examples:
  intercom ui
  intercom ui --name alice`
}

var nonNameChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// defaultUIName is the user's name made into a valid session name.
func defaultUIName() string {
	n := os.Getenv("USER")
	if n == "" {
		if u, err := user.Current(); err == nil {
			n = u.Username
		}
	}
	n = strings.Trim(nonNameChars.ReplaceAllString(n, "-"), "-")
	if n == "" || wire.ValidateName(n) != nil {
		return "user"
	}
	return n
}

// Run starts the UI.
func (u *UICmd) Run(e *env) error {
	name := u.Name
	if name == "" {
		name = defaultUIName()
	}
	if err := wire.ValidateName(name); err != nil {
		return kongrun.Usage(err)
	}
	// Checked before anything is registered: a UI that cannot start leaves
	// no session behind.
	if !tty.Is(e.stdin) || !tty.Is(e.stdout) {
		return kongrun.Usagef("ui needs a terminal: stdin and stdout must be a tty")
	}
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	noColor := os.Getenv("NO_COLOR") != ""
	files := runs.Open(c.Home())
	desk := runs.Desk{Files: files, Connect: e.connect, Launch: runs.OwnerLauncher("", c.Home(), files)}
	err = ui.Run(e.ctx, ui.RunOptions{
		Options: ui.Options{
			Client: c, Cwd: u.Cwd, Shortcut: e.cfg.Shortcut, NoColor: noColor,
			RunsDir: files.Dir, Answer: ui.DeskAnswer(desk), AskTimeout: e.cfg.AskTimeout(),
		},
		Name: name, Status: e.cfg.Status,
	})
	if err != nil {
		return fmt.Errorf("ui: %w", err)
	}
	return nil
}
