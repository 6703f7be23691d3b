package reservations

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestResolveAcrossWorktreeLayout(t *testing.T) {
	top := t.TempDir()
	repo := filepath.Join(top, "repo")
	if err := os.MkdirAll(filepath.Join(repo, ".git"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(repo, "internal", "store"), 0o700); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(repo, "internal")
	pl, rel, err := Resolve(sub, "store/keys.go")
	if err != nil {
		t.Fatal(err)
	}
	if rel != "internal/store/keys.go" {
		t.Fatalf("rel = %q", rel)
	}
	if want := realPath(repo); pl.Root != want || pl.Project != want {
		t.Fatalf("place = %+v, want root and project %s", pl, want)
	}
	if _, rel, err = Resolve(repo, "docs/*.md"); err != nil || rel != "docs/*.md" {
		t.Fatalf("glob: %q %v", rel, err)
	}
	if out, _, err := Resolve(sub, "../../elsewhere.go"); err != nil || out.Project == pl.Project {
		t.Fatalf("a path outside the repository is in a place of its own: %+v %v", out, err)
	}
	if _, err := pl.Rel(sub, "../../elsewhere.go"); !errors.Is(err, ErrOutside) {
		t.Fatalf("outside: %v", err)
	}
}

func TestResolveMissingDirectoryOutsideARepository(t *testing.T) {
	dir := t.TempDir()
	pl, rel, err := Resolve(dir, "not/yet/there.go")
	if err != nil || rel != "not/yet/there.go" || pl.Root != realPath(dir) {
		t.Fatalf("Resolve = %+v %q %v, want the path under %s", pl, rel, err, dir)
	}
}
