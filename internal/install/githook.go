package install

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The git pre-commit hook refusing a commit of paths another session has
// reserved (docs/reservations.md). Install writes the hook, or adds a
// marked block to a pre-commit hook of someone else's; uninstall removes
// exactly that.

const (
	gitHookBegin = "# >>> intercom reservations (intercom install git-hook) >>>"
	gitHookEnd   = "# <<< intercom reservations <<<"
)

// gitHookBlock is what runs in pre-commit.
func (t Target) gitHookBlock() string {
	return gitHookBegin + "\n" +
		"# Refuses a commit of paths another intercom session holds; override (logged):\n" +
		"# INTERCOM_RESERVATIONS_OVERRIDE=1 git commit ...\n" +
		shellQuote(t.Command) + " reservations --staged || exit 1\n" +
		gitHookEnd + "\n"
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// GitHooksDir returns the hooks directory git uses for the repository at
// dir (core.hooksPath honoured; shared by its worktrees).
func GitHooksDir(dir string) (string, error) {
	cmd := exec.Command("git", "rev-parse", "--path-format=absolute", "--git-path", "hooks")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s is not in a git repository (git rev-parse: %w)", dir, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// gitHookPlans adds or removes the pre-commit block of the repository at
// t.Project.
func (t Target) gitHookPlans(add bool) ([]Plan, error) {
	dir, err := GitHooksDir(t.Project)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "pre-commit")
	before, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	if err != nil {
		before = nil
	}
	rest := withoutBlock(before)
	var after []byte
	switch {
	case add && len(bytes.TrimSpace(rest)) == 0:
		after = []byte("#!/bin/sh\n" + t.gitHookBlock())
	case add:
		after = append(ensureNewline(rest), t.gitHookBlock()...)
	case strings.TrimSpace(string(rest)) == "#!/bin/sh" || len(bytes.TrimSpace(rest)) == 0:
		after = nil // only ours was there
	default:
		after = rest
	}
	ours := len(bytes.TrimSpace(rest)) == 0 || strings.TrimSpace(string(rest)) == "#!/bin/sh"
	return []Plan{{Path: path, Before: before, After: keepIfSame(before, after), Owned: ours}}, nil
}

func withoutBlock(b []byte) []byte {
	s := string(b)
	i := strings.Index(s, gitHookBegin)
	if i < 0 {
		return b
	}
	j := strings.Index(s[i:], gitHookEnd)
	if j < 0 {
		return b
	}
	end := i + j + len(gitHookEnd)
	if end < len(s) && s[end] == '\n' {
		end++
	}
	return []byte(s[:i] + s[end:])
}

func ensureNewline(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] != '\n' {
		return append(b, '\n')
	}
	return b
}

// FinishGitHook makes an applied pre-commit hook executable.
func FinishGitHook(p Plan) error {
	if p.After == nil {
		return nil
	}
	return os.Chmod(p.Path, 0o755)
}
