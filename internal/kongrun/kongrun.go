// Package kongrun runs a kong command line with the exit-code contract
// shared by intercom's CLIs: kong's own exits (--help, --version) become a
// returned status, a parse error is one line on stderr and status 2.
package kongrun

import (
	"fmt"
	"io"

	"github.com/alecthomas/kong"
)

type exitSignal struct{}

// Run builds a kong parser for grammar with opts, parses args and calls run
// with the result, returning the exit status.
func Run(name string, grammar any, args []string, stderr io.Writer, opts []kong.Option, run func(*kong.Context) int) (status int) {
	code := -1
	opts = append(opts, kong.Exit(func(c int) { code = c; panic(exitSignal{}) }))
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
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	}
	return run(kctx)
}
