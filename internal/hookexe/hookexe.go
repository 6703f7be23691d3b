// Package hookexe names intercom-hook, the executable that answers harness
// hooks and links only what they need (no UI, MCP or schema packages, no
// command tree), and finds it beside the intercom binary.
package hookexe

import (
	"os"
	"path/filepath"
	"strings"
)

// Name is the hook executable's name. `intercom-hook HARNESS EVENT` does
// what `intercom hook HARNESS EVENT` does.
const Name = "intercom-hook"

// CLIName is the name of the intercom binary installed beside it.
const CLIName = "intercom"

// Beside returns the intercom-hook installed beside the intercom binary
// cli (an absolute path), and whether there is one: an executable regular
// file.
func Beside(cli string) (string, bool) {
	p := filepath.Join(filepath.Dir(cli), Name)
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", false
	}
	return p, true
}

// Is reports whether exe is the hook executable.
func Is(exe string) bool { return strings.TrimSuffix(filepath.Base(exe), ".exe") == Name }

// CLI is the intercom binary for exe, the running executable: exe itself,
// or the intercom beside it when exe is intercom-hook (which has no other
// commands, such as `intercom hold`).
func CLI(exe string) string {
	if !Is(exe) {
		return exe
	}
	return filepath.Join(filepath.Dir(exe), CLIName)
}
