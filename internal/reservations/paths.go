package reservations

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/intercom-dev/intercom/internal/project"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// ErrOutside is returned for a path outside the project of the directory
// it is resolved from: no reservation can cover it.
var ErrOutside = errors.New("outside the project")

// Root returns the worktree root of dir: the nearest directory up from it
// holding a .git entry (a linked worktree's is a file), or dir itself
// outside a repository. Symlinks are resolved.
func Root(dir string) string {
	abs := realPath(dir)
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if d == filepath.Dir(d) {
			return abs
		}
	}
}

// Place is where reservation paths given in a directory are resolved: the
// project (shared by every worktree of one repository) and the root of the
// worktree the paths are relative to.
type Place struct {
	Project string
	Root    string
}

// PlaceOf returns the place of dir.
func PlaceOf(dir string) Place {
	root := Root(dir)
	return Place{Project: project.Of(root), Root: root}
}

// Rel turns p (absolute, or relative to dir) into a reservation path
// relative to the worktree root, slash-separated. Globs are kept as they
// are; the existing part of a path has its symlinks resolved.
func (pl Place) Rel(dir, p string) (string, error) {
	if p == "" {
		return "", errors.New("empty path")
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	p = filepath.Clean(p)
	if !hasMeta(p) {
		p = realPath(p)
	}
	rel, err := filepath.Rel(pl.Root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s: %w %s", p, ErrOutside, pl.Root)
	}
	return filepath.ToSlash(rel), nil
}

// realPath resolves the symlinks of the longest existing prefix of p
// (absolute afterwards).
func realPath(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	var rest []string
	for d := abs; ; d = filepath.Dir(d) {
		if real, err := filepath.EvalSymlinks(d); err == nil {
			return filepath.Join(append([]string{real}, rest...)...)
		}
		if d == filepath.Dir(d) {
			return abs
		}
		rest = append([]string{filepath.Base(d)}, rest...)
	}
}

// Resolve returns the place of path p (absolute, or relative to dir) and p
// relative to its worktree root: dir's place when p is inside its
// worktree, else that of the nearest existing directory holding p, so a
// path into another worktree of the same repository names the same
// reservation path as in this one.
func Resolve(dir, p string) (Place, string, error) {
	if p == "" {
		return Place{}, "", errors.New("empty path")
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	here := PlaceOf(dir)
	if rel, err := here.Rel(dir, p); err == nil {
		return here, rel, nil
	}
	at := filepath.Dir(filepath.Clean(p))
	for at != filepath.Dir(at) {
		if fi, err := os.Stat(at); err == nil && fi.IsDir() && !hasMeta(at) {
			break
		}
		at = filepath.Dir(at)
	}
	pl := PlaceOf(at)
	rel, err := pl.Rel(dir, p)
	return pl, rel, err
}

// ResolveAll resolves paths given in dir to reservation paths of dir's
// project (cleaned, as the broker takes them); a path of another project
// is an error wrapping ErrOutside.
func ResolveAll(dir string, args []string) (Place, []string, error) {
	here := PlaceOf(dir)
	var out []string
	for _, a := range args {
		pl, rel, err := Resolve(dir, a)
		if err == nil && pl.Project != here.Project {
			err = fmt.Errorf("%s: %w %s", a, ErrOutside, here.Project)
		}
		if err == nil {
			rel, err = wire.CleanReservationPath(rel)
		}
		if err != nil {
			return here, nil, err
		}
		out = append(out, rel)
	}
	return here, out, nil
}
