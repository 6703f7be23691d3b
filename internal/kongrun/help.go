package kongrun

import (
	"fmt"
	"strings"

	"github.com/alecthomas/kong"
)

// helpPrinter is kong's help, except that a subcommand's help hides the
// flags it inherits from the root (they are listed in the root's help) and
// names them on one closing line instead.
func helpPrinter(options kong.HelpOptions, ctx *kong.Context) error {
	sel := ctx.Selected()
	if sel == nil || options.Summary {
		return kong.DefaultHelpPrinter(options, ctx)
	}
	var inherited []*kong.Flag
	for n := sel.Parent; n != nil; n = n.Parent {
		for _, f := range n.Flags {
			if !f.Hidden && f.Name != "help" {
				inherited = append(inherited, f)
			}
		}
	}
	for _, f := range inherited {
		f.Hidden = true
	}
	err := kong.DefaultHelpPrinter(options, ctx)
	for _, f := range inherited {
		f.Hidden = false
	}
	if err != nil {
		return err
	}
	var names []string
	for _, f := range inherited {
		if f.Name != "version" {
			names = append(names, "--"+f.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	_, err = fmt.Fprintf(ctx.Stdout, "\nGlobal flags: %s (see %q).\n", strings.Join(names, ", "), ctx.Model.Name+" --help")
	return err
}
