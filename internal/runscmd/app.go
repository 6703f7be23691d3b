// Package runscmd implements agent-runs, the supervisor's CLI: launch child
// agent processes under a detached owner, list them, page and answer their
// durable questions, nudge and stop them.
package runscmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/intercom-dev/intercom/internal/config"
	"github.com/intercom-dev/intercom/internal/kongrun"
	"github.com/intercom-dev/intercom/internal/paths"
	"github.com/intercom-dev/intercom/internal/runs"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Globals are shared flags.
type Globals struct {
	Supervisor string `short:"s" env:"INTERCOM_SESSION" help:"The supervisor session (id, name or id prefix); default INTERCOM_SESSION." placeholder:"TARGET"`
	Home       string `env:"INTERCOM_HOME" help:"State directory." placeholder:"DIR"`
	JSON       bool   `help:"Print machine-readable JSON."`
}

// CLI is the agent-runs command tree.
type CLI struct {
	Globals
	Start     StartCmd     `cmd:"" help:"Launch a child agent process under a detached owner."`
	List      ListCmd      `cmd:"" help:"List this supervisor's runs (all directories)."`
	Status    StatusCmd    `cmd:"" help:"Show one run and its questions."`
	Questions QuestionsCmd `cmd:"" help:"Page durable questions, unresolved first."`
	Answer    AnswerCmd    `cmd:"" help:"Answer a question durably; revives an exited child."`
	Stop      StopCmd      `cmd:"" help:"Cancel a run's open questions and stop its child."`
	Nudge     NudgeCmd     `cmd:"" help:"Steer a live child; on a finished run, show its outcome."`
	Continue  ContinueCmd  `cmd:"" help:"Finish an interrupted revival."`
	Own       OwnCmd       `cmd:"" hidden:"" help:"(internal) own a run: start the child, record its exit."`

	kongrun.Builtins
}

type env struct {
	ctx    context.Context
	stdout io.Writer
	stderr io.Writer
	g      *Globals
	layout paths.Layout
	files  runs.Files
	cfg    config.Config
	log    *slog.Logger
}

// description is the root --help text.
const description = "Supervise child agent runs: launch, answer their durable questions, nudge, stop.\n\nExamples:\n  agent-runs start --agent worker --supervisor planner -- ./child.sh\n  agent-runs questions\n  agent-runs answer 78f659a3 --question-id q1a2b3c4d \"Use the stable API.\"\n  agent-runs stop 78f659a3"

// Main runs agent-runs and returns the exit status.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var c CLI
	return kongrun.Run("agent-runs", &c, args, stdout, stderr, []kong.Option{kong.Name("agent-runs"),
		kong.Description(description),
		kong.Writers(stdout, stderr), kong.UsageOnError(),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
	}, func(kctx *kong.Context) int {
		out := stdout
		if strings.Fields(kctx.Command())[0] != "own" { // the owner prints nothing of its own; see kongrun.Output
			var flush func() error
			out, flush = kongrun.OneWrite(stdout)
			defer flush()
		}
		e := &env{ctx: ctx, stdout: out, stderr: stderr, g: &c.Globals,
			log: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
		var err error
		e.layout, e.cfg, err = config.ForHome(c.Home, "", func(w string) { fmt.Fprintf(stderr, "agent-runs: warning: %s\n", w) })
		if err != nil {
			return e.report(err)
		}
		e.files = runs.Open(e.layout.Home)
		return e.report(kctx.Run(e))
	})
}

// report prints err (one line on stderr, or the JSON error envelope on
// stdout with --json) and returns the exit status (kongrun.Report).
func (e *env) report(err error) int {
	return kongrun.Report("agent-runs", e.stdout, e.stderr, e.g.JSON, err)
}

func (e *env) connect() (*intercom.Client, error) {
	return intercom.Connect(e.ctx, intercom.Options{Home: e.layout.Home, BrokerCommand: e.cfg.BrokerCommand,
		BrokerArgs: e.cfg.BrokerArgs, Timeout: e.cfg.SendTimeout(), Logger: e.log, Name: "agent-runs"})
}

func (e *env) printJSON(v any) error { return kongrun.PrintJSON(e.stdout, v) }

// supervisor resolves --supervisor to a session; ok false when unset.
func (e *env) supervisor(c *intercom.Client) (*wire.Session, bool, error) {
	if e.g.Supervisor == "" {
		return nil, false, nil
	}
	s, err := c.Find(e.ctx, e.g.Supervisor)
	if err != nil {
		if !intercom.Unavailable(err) && !errors.Is(err, intercom.ErrHomeGone) {
			err = fmt.Errorf("supervisor %s: %w", e.g.Supervisor, err)
		}
		return nil, false, err
	}
	return &s, true, nil
}

// outcome is a one-line summary of a finished run.
func outcome(r *runs.Run) string {
	code := "none"
	if r.ExitCode != nil {
		code = fmt.Sprint(*r.ExitCode)
	}
	s := fmt.Sprintf("run %s (%s) %s, exit code %s; output: %s", r.ID, r.Agent, r.State, code, r.OutputPath)
	if r.RevivedTo != "" {
		s += "; revived as " + r.RevivedTo
	}
	return s
}

// filterSupervisor is the supervisor id whose runs a listing shows: "" for
// every run (all set, or no --supervisor).
func (e *env) filterSupervisor(all bool) (string, error) {
	if all || e.g.Supervisor == "" {
		return "", nil
	}
	c, err := e.connect()
	if err != nil {
		return "", err
	}
	defer c.Close()
	s, _, err := e.supervisor(c)
	if err != nil {
		return "", err
	}
	return s.ID, nil
}
