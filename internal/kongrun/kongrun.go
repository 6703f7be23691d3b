// Package kongrun runs a kong command line with the exit-code contract
// shared by intercom's CLIs: kong's own exits (--help, --version) become a
// returned status, a parse error is one line on stderr and status 2.
//
// Every failure is reported by PrintError with the status Classify gives
// it: 1 failure, 2 usage, 130 interrupted; with --json as the error
// envelope {"error":{"code","message"}} on stdout (docs/json.md).
package kongrun

import (
	"fmt"
	"io"

	"github.com/alecthomas/kong"
)

type exitSignal struct{}

// Run builds a kong parser for grammar with opts, parses args and calls run
// with the result, returning the exit status. A parse error is printed like
// any other error (PrintError): on stderr, or as JSON on stdout when args
// ask for --json.
func Run(name string, grammar any, args []string, stdout, stderr io.Writer, opts []kong.Option, run func(*kong.Context) int) (status int) {
	code := -1
	opts = append(opts, DurationMapper(), kong.Exit(func(c int) { code = c; panic(exitSignal{}) }))
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
	kctx, err := parser.Parse(args)
	if err != nil {
		PrintError(name, stdout, stderr, WantsJSON(args), err, "usage")
		return StatusUsage
	}
	return run(kctx)
}
