// Package kongrun runs a kong command line with the conventions shared by
// intercom's four binaries: kong's own exits (--help, --version) become a
// returned status; a parse error is one line on stderr and status 2; a bare
// command prints the short usage with status 0; --version and the `version`,
// `help` and `completion` commands (Builtins) are answered here, before the
// binary loads any configuration; a subcommand's help lists its own flags and
// names the global ones once instead of repeating them.
//
// Every failure of every binary is reported by Report, with the status
// Classify gives it: 1 failure, 2 usage (a UsageError, or bad input), 130
// interrupted, or an ExitError's own status (3: the broker's store became
// unavailable); with --json as the error envelope {"error":{"code","message"}}
// on stdout (docs/json.md).
package kongrun

import (
	"fmt"
	"io"
	"strings"

	"github.com/alecthomas/kong"
	kongcompletion "github.com/jotaen/kong-completion"

	"github.com/intercom-dev/intercom/internal/buildinfo"
)

type exitSignal struct{}

// Run builds a kong parser for grammar with opts, parses args and calls run
// with the result, returning the exit status. The parser's writers (set with
// kong.Writers in opts) receive help, usage, versions and completions. A
// parse error is printed like any other error (PrintError): on stderr, or as
// JSON on stdout when args ask for --json.
func Run(name string, grammar any, args []string, stdout, stderr io.Writer, opts []kong.Option, run func(*kong.Context) int) (status int) {
	code := -1
	opts = append(opts,
		DurationMapper(),
		kong.Exit(func(c int) { code = c; panic(exitSignal{}) }),
		kong.Vars{"version": name + " " + buildinfo.Read().String()},
		kong.Help(helpPrinter),
	)
	parser, err := kong.New(grammar, opts...)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(exitSignal); ok {
				status = code
				return
			}
			panic(r)
		}
	}()
	describeBuiltins(parser.Model.Node, name)
	// A shell asking for completions (COMP_LINE set) is answered and exits here.
	kongcompletion.Register(parser, kongcompletion.WithErrorHandler(func(err error) {
		fmt.Fprintf(stderr, "%s: completion: %v\n", name, err)
	}))
	if len(args) == 0 && !hasDefaultCommand(parser.Model.Node) {
		return shortUsage(parser)
	}
	kctx, err := parser.Parse(args)
	if err != nil {
		PrintError(name, stdout, stderr, WantsJSON(args), err, "usage")
		return StatusUsage
	}
	if b, ok := selectedBuiltin(kctx); ok {
		return b.exec(parser, kctx)
	}
	return run(kctx)
}

// shortUsage is what a bare command prints: the usage line, the description
// (with its examples), the command names and where the rest is.
func shortUsage(parser *kong.Kong) int {
	app := parser.Model
	var names []string
	for _, c := range app.Children {
		if !c.Hidden {
			names = append(names, c.Name)
		}
	}
	fmt.Fprintf(parser.Stdout, "Usage: %s%s\n\n%s\n\n%s\n\nRun \"%s --help\" for flags and every command, \"%s help COMMAND\" for one.\n",
		app.Name, app.Summary(), strings.TrimSpace(app.Help), wrap("Commands: "+strings.Join(names, ", "), 78, "  "), app.Name, app.Name)
	return 0
}

// wrap breaks s at spaces into lines of at most width bytes, indenting the
// continuation lines.
func wrap(s string, width int, indent string) string {
	var b strings.Builder
	line := 0
	for i, w := range strings.Fields(s) {
		switch {
		case i == 0:
		case line+1+len(w) > width:
			b.WriteString("\n" + indent)
			line = len(indent)
		default:
			b.WriteByte(' ')
			line++
		}
		b.WriteString(w)
		line += len(w)
	}
	return b.String()
}

// hasDefaultCommand reports whether a bare invocation runs a command (the
// broker serves), rather than needing one to be named.
func hasDefaultCommand(n *kong.Node) bool {
	return len(n.Children) == 0 || n.DefaultCmd != nil
}
