// Package lazyre compiles a package's regular expressions on first use
// rather than at program start: every intercom process (a hook runs at
// each tool call of each agent) would otherwise compile them all in its
// package initialisers, whether it uses them or not.
package lazyre

import (
	"regexp"
	"sync"
)

// New returns a function that compiles expr once, when first called, and
// then returns it. expr must be valid (it panics like regexp.MustCompile).
func New(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
