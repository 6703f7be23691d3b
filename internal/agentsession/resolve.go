package agentsession

import (
	"context"
	"os"
	"path/filepath"

	"github.com/intercom-dev/intercom/internal/proctree"
)

// ForCommand returns the session an intercom command run by an agent (in
// its shell tool, with no --session) acts as: the nearest bound ancestor's.
// With no binding yet, it joins from what the harness tells its shell
// commands (connect is called only then): under Claude Code the harness is
// the ancestor running CLAUDE_CODE_EXECPATH and the session
// CLAUDE_CODE_SESSION_ID's; under Codex the ancestor running codex and the
// session CODEX_THREAD_ID's. ok is false outside an agent.
func (s Agents) ForCommand(ctx context.Context, home string, connect func() (Client, error)) (Binding, bool, error) {
	if b, ok := s.Nearest(); ok {
		return b, true, nil
	}
	var p proctree.Proc
	var r Request
	switch exe := os.Getenv("CLAUDE_CODE_EXECPATH"); {
	case os.Getenv(ClaudeSessionEnv) != "" && exe != "":
		p, r = ancestorRunning(filepath.Base(exe)), Request{Harness: "claude"}
	case os.Getenv(CodexThreadEnv) != "":
		p, r = ancestorRunning("codex"), Request{Harness: "codex", HarnessSession: os.Getenv(CodexThreadEnv)}
	}
	if p.Pid == 0 {
		return Binding{}, false, nil
	}
	c, err := connect()
	if err != nil {
		return Binding{}, false, err
	}
	defer c.Close()
	r.Name, r.Cwd = os.Getenv("INTERCOM_NAME"), cwd()
	b, err := s.Join(ctx, c, home, p, r)
	return b, err == nil, err
}

// CodexThreadEnv is the variable Codex sets for its shell commands: the
// thread id its hooks see as session_id.
const CodexThreadEnv = "CODEX_THREAD_ID"

func cwd() string {
	d, _ := os.Getwd()
	return d
}

// ancestorRunning finds the nearest ancestor whose command name is exe's
// (the kernel keeps at most 15 bytes of it on Linux).
func ancestorRunning(exe string) proctree.Proc {
	for _, p := range proctree.Ancestors(os.Getpid(), 64) {
		if p.Comm == exe || (len(p.Comm) == 15 && len(exe) > 15 && exe[:15] == p.Comm) {
			return p
		}
	}
	return proctree.Proc{}
}
