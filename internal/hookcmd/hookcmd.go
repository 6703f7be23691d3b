// Package hookcmd is the hook command: `intercom hook HARNESS EVENT` and
// the intercom-hook executable (internal/hookexe), which run this one
// implementation. It reads the home's config, connects, and answers the
// event: hooks.Run, or for the pre-tool event the reservations check. It
// links only what hooks need (no command tree, UI, MCP or schema packages,
// and no NATS library: its broker client is internal/hookclient;
// TestHookExecutableImports), since every tool call of every agent starts
// it.
package hookcmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/intercom-dev/intercom/internal/buildinfo"
	"github.com/intercom-dev/intercom/internal/config"
	"github.com/intercom-dev/intercom/internal/hookclient"
	"github.com/intercom-dev/intercom/internal/hookexe"
	"github.com/intercom-dev/intercom/internal/hooks"
	"github.com/intercom-dev/intercom/internal/render"
)

// Env is where a hook call runs: the home ("" for INTERCOM_HOME, else the
// default) and socket ("" for INTERCOM_SOCKET, else the home's), whether
// the client logs its activity, and the process's streams.
type Env struct {
	Home, Socket string
	Verbose      bool
	Stdin        io.Reader
	Stdout       io.Writer
	Stderr       io.Writer
}

// Args parses the arguments after `hook`: HARNESS EVENT, optionally
// --hold DUR (or --hold=DUR). It reports false for any other form, which
// the caller answers with its usage (--help included).
func Args(args []string) (hooks.Call, bool) {
	var call hooks.Call
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--hold" && i+1 < len(args):
			i++
			a = "--hold=" + args[i]
			fallthrough
		case strings.HasPrefix(a, "--hold="):
			d, err := time.ParseDuration(strings.TrimPrefix(a, "--hold="))
			if err != nil || d < 0 {
				return call, false
			}
			call.Hold = d
		case strings.HasPrefix(a, "-"):
			return call, false
		default:
			pos = append(pos, a)
		}
	}
	if len(pos) != 2 {
		return call, false
	}
	call.Harness, call.Event = pos[0], pos[1]
	return call, true
}

// usage is intercom-hook's --help.
const usage = `Usage: intercom-hook HARNESS EVENT [--hold DUR]

Answers a harness hook exactly as 'intercom hook HARNESS EVENT' does (see
'intercom hook --help'), in an executable that links only what hooks need,
so each hook costs little more than starting a process. 'intercom install'
writes it into the hook commands when it sits beside intercom.

Examples:
  echo '{"session_id":"abc","hook_event_name":"PostToolUse","tool_name":"Bash","cwd":"/src"}' | intercom-hook claude PostToolUse
  intercom-hook gemini AfterAgent --hold 5m < input.json
  intercom-hook version [--json]
`

// version is `intercom-hook version [--json]`, as kongrun's version
// command prints it for the other binaries.
func version(stdout, stderr io.Writer, args []string) int {
	in := buildinfo.Read()
	switch {
	case len(args) == 0:
		fmt.Fprintf(stdout, "%s %s\n", hookexe.Name, in)
	case len(args) == 1 && args[0] == "--json":
		out, _ := json.Marshal(in)
		fmt.Fprintf(stdout, "%s\n", out)
	default:
		fmt.Fprintf(stderr, "intercom-hook: version takes only --json, got %q\n", strings.Join(args, " "))
		return 2
	}
	return 0
}

// Main is intercom-hook with args (those after the program name) and
// returns its exit status: 0 always once the call parses (a hook never
// breaks the agent's turn), 2 for a usage error.
//
// Only a call with --hold (a Stop hook that may wait minutes for a waking
// message) ends its wait on SIGINT or SIGTERM and exits 0 with what it
// has. Any other hook lasts a few milliseconds and keeps the default
// disposition: a signal ends it at once, as a harness that gives up on a
// hook expects (and ignores its output). os/signal's handler would cost
// every hook process a locked thread and a signal thread at start, 6–7% of
// its wall time, for a window of milliseconds. A hook ended between
// showing messages and their acknowledgement leaves them unacknowledged:
// the next hook hands them over again.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "--help" || args[0] == "-h") {
		fmt.Fprint(stdout, usage)
		return 0
	}
	if len(args) >= 1 && args[0] == "version" { // as every intercom binary
		return version(stdout, stderr, args[1:])
	}
	call, ok := Args(args)
	if !ok {
		fmt.Fprintf(stderr, "intercom-hook: want HARNESS EVENT [--hold DUR], got %q (intercom-hook --help)\n", strings.Join(args, " "))
		return 2
	}
	if call.Hold > 0 {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
	}
	Run(ctx, call, Env{Stdin: stdin, Stdout: stdout, Stderr: stderr})
	return 0
}

// Run answers call. It never fails: every problem (config included) is one
// line on e.Stderr, and Gemini CLI still gets its JSON answer.
func Run(ctx context.Context, call hooks.Call, e Env) {
	_, cfg, err := config.ForHome(e.Home, e.Socket, func(w string) { fmt.Fprintf(e.Stderr, "intercom: warning: %s\n", w) })
	if err != nil {
		ConfigFailed(call, e.Stdout, e.Stderr, err)
		return
	}
	level := slog.LevelWarn
	if e.Verbose {
		level = slog.LevelDebug
	}
	log := slog.New(render.LogHandler(slog.NewTextHandler(e.Stderr, &slog.HandlerOptions{Level: level})))
	connect := func(existing bool) (*hookclient.Client, error) {
		return hookclient.Connect(ctx, hookclient.Options{
			Home: e.Home, Socket: e.Socket,
			BrokerCommand: cfg.BrokerCommand, BrokerArgs: cfg.BrokerArgs,
			Timeout: cfg.SendTimeout(), Logger: log, ExistingHome: existing,
		})
	}
	if hooks.IsPreTool(call.Harness, call.Event) {
		preToolUse(ctx, call, e, connect)
		return
	}
	hookConnect := func(existing bool) (hooks.Client, error) {
		c, err := connect(existing)
		if err != nil {
			return nil, err // not a nil *hookclient.Client in an interface
		}
		return c, nil
	}
	hooks.Run(ctx, call, hooks.Env{Connect: hookConnect, ReplyHint: cfg.ReplyHint, DigestBytes: int(cfg.DigestBytes), Stdin: e.Stdin, Stdout: e.Stdout, Stderr: e.Stderr})
}

// ConfigFailed reports a config that could not be loaded: the hook does
// nothing, says so in one line, and answers Gemini CLI with hooks.Empty
// (it shows a hook's stderr when its stdout is empty).
func ConfigFailed(call hooks.Call, stdout, stderr io.Writer, err error) {
	fmt.Fprintf(stderr, "intercom hook: %s (did nothing)\n", render.OneLine(err.Error()))
	if call.Harness == "gemini" {
		_, _ = stdout.Write(hooks.Empty)
	}
}
