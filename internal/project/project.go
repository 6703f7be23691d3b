// Package project identifies the project a working directory belongs to: the
// git common directory, so that every worktree of one repository shares a
// project. Outside a repository the directory itself is the project.
package project

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/intercom-dev/intercom/internal/bounded"
)

// Of returns the project identity of dir: the main worktree root of its git
// repository (the parent of the common dir when that is named .git, else the
// common dir itself), or dir when it is not inside a repository.
func Of(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	for d := abs; ; d = filepath.Dir(d) {
		if common, ok := commonDir(filepath.Join(d, ".git")); ok {
			if filepath.Base(common) == ".git" {
				return filepath.Dir(common)
			}
			return common
		}
		if d == filepath.Dir(d) {
			return abs
		}
	}
}

// commonDir resolves a .git entry (directory, or "gitdir:" file of a linked
// worktree) to the repository's common dir.
func commonDir(dotgit string) (string, bool) {
	fi, err := os.Stat(dotgit)
	if err != nil {
		return "", false
	}
	gitdir := dotgit
	if !fi.IsDir() {
		data, err := bounded.ReadFile(dotgit, dotgit, 64<<10)
		if err != nil {
			return "", false
		}
		line := strings.TrimSpace(string(data))
		if !strings.HasPrefix(line, "gitdir:") {
			return "", false
		}
		gitdir = strings.TrimSpace(strings.TrimPrefix(line, "gitdir:"))
		if !filepath.IsAbs(gitdir) {
			gitdir = filepath.Join(filepath.Dir(dotgit), gitdir)
		}
	}
	common := gitdir
	if data, err := bounded.ReadFile(filepath.Join(gitdir, "commondir"), "commondir", 64<<10); err == nil {
		c := strings.TrimSpace(string(data))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitdir, c)
		}
		common = c
	}
	common = filepath.Clean(common)
	if real, err := filepath.EvalSymlinks(common); err == nil {
		common = real
	}
	return common, true
}
