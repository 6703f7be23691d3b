package hookcmd

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// forbidden are the packages (import path prefixes) the hook executable
// must not link: each hook is a new process, and their init and page-in
// are paid at every tool call of every agent.
var forbidden = []string{
	"github.com/modelcontextprotocol/",              // MCP SDK
	"github.com/google/jsonschema-go/",              // JSON Schema (via the MCP SDK)
	"github.com/alecthomas/kong",                    // the command tree
	"github.com/jotaen/kong-completion",             //
	"charm.land/",                                   // lipgloss, bubbletea: the UI
	"github.com/charmbracelet/",                     //
	"github.com/atotto/clipboard",                   //
	"modernc.org/sqlite",                            // the history index
	"github.com/dgraph-io/badger",                   // the store
	"github.com/nats-io/",                           // the broker's server, and nats.go: its start-up alone (crypto/tls, net/http, gob) costs a small program's again
	"github.com/goccy/go-json",                      // a faster JSON than a hook's few small requests need, at a start-up cost
	"crypto/tls",                                    //
	"net",                                           // and net/*: its resolver's init and the network poller; the broker's socket is internal/unixsock
	"regexp",                                        // its parser's unicode tables are built at start; the hook's few rules are package ascii
	"github.com/intercom-dev/intercom/pkg/intercom", // the full client: hooks use internal/hookclient
	"github.com/intercom-dev/intercom/internal/intercomcmd",
	"github.com/intercom-dev/intercom/internal/kongrun",
	"github.com/intercom-dev/intercom/internal/schema",
	"github.com/intercom-dev/intercom/internal/mcpserver",
	"github.com/intercom-dev/intercom/internal/ui",
	"github.com/intercom-dev/intercom/internal/web",
	"github.com/intercom-dev/intercom/internal/install",
}

// The hook executable's import graph holds none of the packages hooks do
// not use.
func TestHookExecutableImports(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not on PATH")
	}
	out, err := exec.Command(goBin, "list", "-deps", "github.com/intercom-dev/intercom/cmd/intercom-hook").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 20 || !slices.Contains(deps, "github.com/intercom-dev/intercom/internal/hooks") {
		t.Fatalf("go list -deps gave no import graph of intercom-hook: %q", out)
	}
	for _, p := range deps {
		for _, f := range forbidden {
			if strings.HasPrefix(p, f) {
				t.Errorf("intercom-hook links %s (forbidden: %s); go list -deps ./cmd/intercom-hook, then 'go mod why' to see the path", p, f)
			}
		}
	}
}
