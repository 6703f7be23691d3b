package agentsession

import (
	"context"
	"os"
	"path/filepath"

	"github.com/intercom-dev/intercom/internal/proctree"
	"github.com/intercom-dev/intercom/pkg/intercom"
)

// ForCommand returns the session an intercom command run by an agent (in
// its shell tool, with no --session) acts as: the nearest bound ancestor's.
// Under Claude Code with no binding yet, the harness is the ancestor
// running CLAUDE_CODE_EXECPATH and the session CLAUDE_CODE_SESSION_ID's,
// joined (connect is called only then). ok is false outside an agent.
func (s Store) ForCommand(ctx context.Context, home string, connect func() (*intercom.Client, error)) (Binding, bool, error) {
	if b, ok := s.Nearest(); ok {
		return b, true, nil
	}
	sid, exe := os.Getenv(ClaudeSessionEnv), os.Getenv("CLAUDE_CODE_EXECPATH")
	if sid == "" || exe == "" {
		return Binding{}, false, nil
	}
	p, ok := ancestorRunning(filepath.Base(exe))
	if !ok {
		return Binding{}, false, nil
	}
	c, err := connect()
	if err != nil {
		return Binding{}, false, err
	}
	defer c.Close()
	cwd, _ := os.Getwd()
	b, err := s.Join(ctx, c, home, p, Request{Harness: "claude", Name: os.Getenv("INTERCOM_NAME"), Cwd: cwd})
	return b, err == nil, err
}

// ancestorRunning finds the nearest ancestor whose command name is exe's
// (the kernel keeps at most 15 bytes of it on Linux).
func ancestorRunning(exe string) (proctree.Proc, bool) {
	for _, p := range proctree.Ancestors(os.Getpid(), 64) {
		if p.Comm == exe || (len(p.Comm) == 15 && len(exe) > 15 && exe[:15] == p.Comm) {
			return p, true
		}
	}
	return proctree.Proc{}, false
}
