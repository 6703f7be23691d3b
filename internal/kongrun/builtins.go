package kongrun

import (
	"fmt"
	"strings"

	"github.com/alecthomas/kong"
	kongcompletion "github.com/jotaen/kong-completion"

	"github.com/intercom-dev/intercom/internal/buildinfo"
)

// Builtins are the commands every intercom binary has. Embed it in a
// command-line grammar; Run answers them itself.
type Builtins struct {
	VersionFlag kong.VersionFlag `name:"version" help:"Print the version and exit."`

	Help       HelpCmd       `cmd:"" group:"Help and set-up" help:"Show help for a command."`
	Version    VersionCmd    `cmd:"" group:"Help and set-up" help:"Print the version, commit and Go version (--json for JSON)."`
	Completion CompletionCmd `cmd:"" group:"Help and set-up" help:"Print a bash, zsh or fish completion script."`
}

// builtin is a command answered by Run rather than by the binary.
type builtin interface {
	exec(parser *kong.Kong, kctx *kong.Context) int
	detail(name string) string
}

func selectedBuiltin(kctx *kong.Context) (builtin, bool) {
	sel := kctx.Selected()
	if sel == nil || !sel.Target.CanAddr() {
		return nil, false
	}
	b, ok := sel.Target.Addr().Interface().(builtin)
	return b, ok
}

// describeBuiltins gives each builtin command its --help text, which names
// the binary in its examples.
func describeBuiltins(root *kong.Node, name string) {
	for _, c := range root.Children {
		if !c.Target.CanAddr() {
			continue
		}
		if b, ok := c.Target.Addr().Interface().(builtin); ok {
			c.Detail = b.detail(name)
		}
	}
}

// HelpCmd is `help [COMMAND...]`: the same as COMMAND --help.
type HelpCmd struct {
	Command []string `arg:"" optional:"" help:"The command to explain (default: all of them)."`
}

func (h *HelpCmd) exec(parser *kong.Kong, _ *kong.Context) int {
	// --help prints and exits through kong.Exit, which Run turns into status 0.
	if _, err := parser.Parse(append(append([]string{}, h.Command...), "--help")); err != nil {
		fmt.Fprintf(parser.Stderr, "%s: help %s: %v\n", parser.Model.Name, strings.Join(h.Command, " "), err)
		return 2
	}
	return 0
}

func (*HelpCmd) detail(name string) string {
	return fmt.Sprintf(`Prints the help of a command, as COMMAND --help does.

Examples:
  %[1]s help
  %[1]s help %[2]s`, name, "version")
}

// VersionCmd is `version`: the version, commit and Go toolchain of this
// binary, as one line or, with the command line's --json flag, as JSON.
type VersionCmd struct{}

func (*VersionCmd) exec(parser *kong.Kong, kctx *kong.Context) int {
	in := buildinfo.Read()
	if jsonRequested(kctx) {
		if err := PrintJSON(parser.Stdout, in); err != nil {
			fmt.Fprintf(parser.Stderr, "%s: version: %v\n", parser.Model.Name, err)
			return 1
		}
		return 0
	}
	fmt.Fprintf(parser.Stdout, "%s %s\n", parser.Model.Name, in)
	return 0
}

func (*VersionCmd) detail(name string) string {
	return fmt.Sprintf(`Prints "%[1]s VERSION (commit SHA, GO, OS/ARCH)". With --json:
{"version","commit","modified","built","go","os","arch"}. Builds by
'make build' or 'make install' are stamped with 'git describe'; others (go
install, go build) report the version and revision the Go toolchain recorded.

Examples:
  %[1]s version
  %[1]s version --json`, name)
}

// jsonRequested reports whether a flag named json is set on the parsed path.
func jsonRequested(kctx *kong.Context) bool {
	for _, f := range kctx.Flags() {
		if f.Name == "json" {
			v, _ := kctx.FlagValue(f).(bool)
			return v
		}
	}
	return false
}

// CompletionCmd is `completion SHELL`: the script that makes SHELL complete
// this binary's commands, flags and enum values. The script calls the binary
// back (COMP_LINE) and Run answers; the library is jotaen/kong-completion.
type CompletionCmd struct {
	Shell string `arg:"" enum:"bash,zsh,fish" help:"bash, zsh or fish."`
}

func (c *CompletionCmd) exec(_ *kong.Kong, kctx *kong.Context) int {
	// Run prints the script and exits through kong.Exit (status 0).
	if err := (&kongcompletion.Completion{Shell: c.Shell, Code: true}).Run(kctx); err != nil {
		fmt.Fprintf(kctx.Stderr, "%s: completion: %v\n", kctx.Model.Name, err)
		return 1
	}
	return 0
}

func (*CompletionCmd) detail(name string) string {
	return fmt.Sprintf(`Prints a script that makes the shell complete %[1]s's commands, flags and
their values. Load it in the current shell, or add the same line to the
shell's start-up file to keep it (see docs/install.md).

Examples:
  source <(%[1]s completion bash)          # bash; keep it in ~/.bashrc
  source <(%[1]s completion zsh)           # zsh; keep it in ~/.zshrc
  %[1]s completion fish | source           # fish; keep it in ~/.config/fish/config.fish`, name)
}
