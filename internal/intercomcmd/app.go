// Package cli implements the intercom command line: one file per command,
// each a kong command struct with a Run method. Errors are mapped to exit
// codes in one place: 2 for usage errors, 1 for failures.
package intercomcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/intercom-dev/intercom/internal/config"
	"github.com/intercom-dev/intercom/internal/hookcmd"
	"github.com/intercom-dev/intercom/internal/kongrun"
	"github.com/intercom-dev/intercom/internal/paths"
	"github.com/intercom-dev/intercom/internal/render"
	"github.com/intercom-dev/intercom/pkg/intercom"
)

// Globals are flags every command accepts.
type Globals struct {
	Session string `short:"s" env:"INTERCOM_SESSION" help:"Act as this session (id, name or id prefix)."`
	Home    string `env:"INTERCOM_HOME" help:"State directory (default: $$XDG_STATE_HOME/intercom or ~/.local/state/intercom)." placeholder:"DIR"`
	Socket  string `env:"INTERCOM_SOCKET" help:"Broker socket path (default: a private dir keyed by uid and home)." placeholder:"PATH"`
	JSON    bool   `help:"Print machine-readable JSON."`
	Verbose bool   `short:"v" help:"Log client activity to stderr."`
}

// CLI is the intercom command tree.
type CLI struct {
	Globals

	Attach  AttachCmd  `cmd:"" help:"Register a session and hold it, printing arriving messages."`
	List    ListCmd    `cmd:"" help:"List sessions (this project by default)."`
	Status  StatusCmd  `cmd:"" help:"Show connection status and sessions."`
	State   StateCmd   `cmd:"" help:"Report a held session's lifecycle: idle, thinking or tool:NAME."`
	Send    SendCmd    `cmd:"" help:"Send a message; returns once it is durably stored."`
	Ask     AskCmd     `cmd:"" help:"Send a question and wait for the reply."`
	Reply   ReplyCmd   `cmd:"" help:"Answer an inbound ask."`
	Pending PendingCmd `cmd:"" help:"List unresolved inbound asks."`
	Inbox   InboxCmd   `cmd:"" help:"Fetch and acknowledge undelivered messages."`
	Forget  ForgetCmd  `cmd:"" help:"Remove a disconnected session and its inbox."`
	Ui      UICmd      `cmd:"" name:"ui" help:"Terminal UI: watch and talk to your agent sessions."`

	Install           InstallCmd   `cmd:"" group:"Agents" help:"Install intercom into Claude Code, Codex, Gemini CLI (hooks, MCP server), Pi (extension) or OpenCode (plugin)."`
	Uninstall         UninstallCmd `cmd:"" group:"Agents" help:"Remove what install added."`
	Doctor            DoctorCmd    `cmd:"" group:"Agents" help:"Check the broker and each agent harness: version, install, hooks, MCP server."`
	Hook              HookCmd      `cmd:"" group:"Agents" help:"Answer a Claude Code, Codex or Gemini CLI hook (stdin JSON → stdout JSON)."`
	Wait              WaitCmd      `cmd:"" group:"Agents" help:"Block until a message arrives; exit 2 when woken."`
	Opencode          OpencodeCmd  `cmd:"" name:"opencode" group:"Agents" help:"(for the OpenCode plugin) hold one OpenCode session's intercom session over JSON lines."`
	Trace             TraceCmd     `cmd:"" help:"Show a message's delivery timeline."`
	Held              HeldCmd      `cmd:"" help:"List messages held for a person's approval; approve or refuse them."`
	History           HistoryCmd   `cmd:"" group:"History" help:"Show delivered messages and topic records in order."`
	Search            SearchCmd    `cmd:"" group:"History" help:"Find delivered messages by the words in them."`
	Purge             PurgeCmd     `cmd:"" group:"History" help:"Remove delivered messages and records from the history."`
	Web               WebCmd       `cmd:"" group:"History" help:"Serve a live web view of the sessions, messages, topics and runs on 127.0.0.1."`
	Config            ConfigCmd    `cmd:"" help:"Show the configuration in effect."`
	Hold              HoldCmd      `cmd:"" hidden:"" help:"(internal) keep a session connected while a process lives."`
	Mcp               McpCmd       `cmd:"" name:"mcp" help:"Serve MCP on stdio (the intercom tool for any MCP client)."`
	ContactSupervisor ContactCmd   `cmd:"" name:"contact-supervisor" help:"From a supervised child: ask or update the supervisor."`
	Tool              ToolCmd      `cmd:"" group:"Agents" help:"Run one call of the intercom or contact_supervisor tool (for harness extensions)."`
	Digest            DigestCmd    `cmd:"" group:"Agents" help:"Render messages as one boundary's digest: by priority, within the budget (for harness extensions)."`

	Subscribe   SubscribeCmd   `cmd:"" group:"Topics" help:"Subscribe to an exact topic."`
	Unsubscribe UnsubscribeCmd `cmd:"" group:"Topics" help:"Remove a topic subscription."`
	Publish     PublishCmd     `cmd:"" group:"Topics" help:"Replace this session's record on a topic."`
	Topics      TopicsCmd      `cmd:"" group:"Topics" help:"Show topic records, subscribers and resource owners."`

	Reserve      ReserveCmd      `cmd:"" group:"Reservations" help:"Take leases on project paths (exclusive unless --shared), with fencing tokens."`
	Release      ReleaseCmd      `cmd:"" group:"Reservations" help:"Let go of this session's leases."`
	Reservations ReservationsCmd `cmd:"" group:"Reservations" help:"List, check (--check PATH [--token N]) or trace (--history PATH) leases."`

	kongrun.Builtins
}

// env is what commands get through kong bindings.
type env struct {
	ctx    context.Context
	stdout io.Writer
	stderr io.Writer
	stdin  io.Reader
	g      *Globals
	cfg    config.Config
	log    *slog.Logger
	// configErr is why config.json could not be loaded (only doctor runs
	// despite it).
	configErr error
}

// description is the root --help text.
const description = "Find and talk to the other agent sessions on this machine.\n\nExamples:\n  intercom attach --name planner           # hold a session, print messages\n  intercom list --scope all                # every connected session\n  intercom send worker \"tests pass\"        # steer a message to worker\n  intercom ask reviewer \"ship it?\"         # wait for the answer\n  intercom --session worker reply \"yes\"    # answer the pending ask"

// Main runs the CLI and returns the exit status.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// `intercom hook HARNESS EVENT [--hold DUR]`, as the harnesses run it at
	// every tool call of every agent, skips building the command tree
	// (kong.New reflects over every command and flag, a quarter of a hook
	// process's CPU); the global flags come from their environment
	// variables. Any other form goes through kong.
	if len(args) > 0 && args[0] == "hook" {
		if call, ok := hookcmd.Args(args[1:]); ok {
			hookcmd.Run(ctx, call, hookcmd.Env{Stdin: stdin, Stdout: stdout, Stderr: stderr})
			return 0
		}
	}
	var c CLI
	return kongrun.Run("intercom", &c, args, stdout, stderr, []kong.Option{
		kong.Name("intercom"),
		kong.Description(description),
		kong.UsageOnError(),
		kong.Writers(stdout, stderr),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
	}, func(kctx *kong.Context) int {
		return run(ctx, &c, kctx.Command(), stdin, stdout, stderr, func(e *env) error { return kctx.Run(e) })
	})
}

// run runs command (parsed into c) through do and returns the exit status.
func run(ctx context.Context, c *CLI, command string, stdin io.Reader, stdout, stderr io.Writer, do func(*env) error) int {
	out := stdout
	if !streaming[strings.Fields(command)[0]] {
		var flush func() error
		out, flush = kongrun.OneWrite(stdout)
		defer flush()
	}
	e := &env{ctx: ctx, stdout: out, stderr: stderr, stdin: stdin, g: &c.Globals}
	level := slog.LevelWarn
	if c.Verbose {
		level = slog.LevelDebug
	}
	e.log = slog.New(render.LogHandler(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})))
	if strings.HasPrefix(command, "hook ") { // it loads the config itself (internal/hookcmd)
		return e.report(do(e))
	}
	if err := e.loadConfig(); err != nil {
		if strings.HasPrefix(command, "doctor") { // doctor reports it as a check
			e.configErr = err
			return e.report(do(e))
		}
		if hookLike(command, c) { // a hook never blocks the agent
			fmt.Fprintf(stderr, "intercom %s: %s (did nothing)\n", strings.Fields(command)[0], render.OneLine(err.Error()))
			return 0
		}
		return e.report(err)
	}
	e.joinAgent(command)
	return e.report(do(e))
}

// streaming names the commands that write to stdout as they go: they print
// events, a protocol or a screen (attach, mcp, ui, hold, opencode), or
// acknowledge messages only once the write that hands them over has
// succeeded (hook, wait, inbox, tool: held back until exit, that write could
// fail after the ack).
// Every other command's output is written at once when it ends
// (kongrun.Output).
var streaming = map[string]bool{"attach": true, "ui": true, "mcp": true, "hold": true, "hook": true, "wait": true, "inbox": true, "tool": true, "opencode": true, "web": true}

// hookLike reports whether the command runs as a harness hook.
func hookLike(command string, c *CLI) bool {
	return strings.HasPrefix(command, "hook ") || (strings.HasPrefix(command, "wait") && c.Wait.Rewake)
}

// home is the state directory in use.
func (e *env) home() string {
	l, err := paths.Resolve(e.g.Home, e.g.Socket)
	if err != nil {
		return e.g.Home
	}
	return l.Home
}

func (e *env) loadConfig() error {
	_, cfg, err := config.ForHome(e.g.Home, e.g.Socket, func(w string) { fmt.Fprintf(e.stderr, "intercom: warning: %s\n", w) })
	if err != nil {
		return err
	}
	e.cfg = cfg
	return nil
}

// report prints err (one line on stderr, or the JSON error envelope on
// stdout with --json) and returns the exit status (kongrun.Report).
func (e *env) report(err error) int {
	return kongrun.Report("intercom", e.stdout, e.stderr, e.g.JSON, err)
}

// connect opens a client with the configured home and socket.
func (e *env) connect() (*intercom.Client, error) { return e.connectHome(false) }

// connectHome is connect; with existing, a missing home is an error
// (intercom.ErrHomeGone) rather than created with a new broker.
func (e *env) connectHome(existing bool) (*intercom.Client, error) {
	return intercom.Connect(e.ctx, intercom.Options{
		Home: e.g.Home, Socket: e.g.Socket,
		BrokerCommand: e.cfg.BrokerCommand, BrokerArgs: e.cfg.BrokerArgs,
		Timeout: e.cfg.SendTimeout(), Logger: e.log, Name: "intercom-cli", ExistingHome: existing,
	})
}

func (e *env) printJSON(v any) error { return kongrun.PrintJSON(e.stdout, v) }

// self resolves --session to a session id, or "" when unset.
func (e *env) self(c *intercom.Client) (string, error) {
	if e.g.Session == "" {
		return "", nil
	}
	s, err := c.Find(e.ctx, e.g.Session)
	if err != nil && !intercom.Unavailable(err) && !errors.Is(err, intercom.ErrHomeGone) {
		err = fmt.Errorf("--session %s: %w", e.g.Session, err)
	}
	if err != nil {
		return "", err
	}
	return s.ID, nil
}

// needSelf is self() for commands that cannot work without a session.
func (e *env) needSelf(c *intercom.Client, cmd string) (string, error) {
	if e.g.Session == "" {
		return "", kongrun.Usagef("%s needs --session or INTERCOM_SESSION: the session to act as", cmd)
	}
	return e.self(c)
}
