package project

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	c := exec.Command("git", args...)
	c.Dir = dir
	c.Env = append(os.Environ(),
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// realTemp returns a temp dir with symlinks resolved (Of resolves them too).
func realTemp(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestWorktreesShareProject(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is required for this test")
	}
	root := realTemp(t)
	repo := filepath.Join(root, "repo")
	if err := os.MkdirAll(filepath.Join(repo, "sub", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "init", "-q")
	if err := os.WriteFile(filepath.Join(repo, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "add", "f")
	git(t, repo, "commit", "-q", "-m", "init")
	git(t, repo, "worktree", "add", "-q", filepath.Join(root, "wt"))

	want := repo
	for _, dir := range []string{repo, filepath.Join(repo, "sub", "deep"), filepath.Join(root, "wt")} {
		if got := Of(dir); got != want {
			t.Errorf("Of(%s) = %s, want %s", dir, got, want)
		}
	}
	other := filepath.Join(root, "elsewhere")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := Of(other); got == want {
		t.Errorf("unrelated dir %s shares the repo's project", other)
	}
}

func TestSeparateReposDiffer(t *testing.T) {
	t.Parallel()
	root := realTemp(t)
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	for _, d := range []string{a, b} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		git(t, d, "init", "-q")
	}
	if Of(a) == Of(b) {
		t.Fatalf("two repos share project %s", Of(a))
	}
	if Of(a) != a {
		t.Fatalf("Of(%s) = %s", a, Of(a))
	}
}

func TestNonRepoDirIsItself(t *testing.T) {
	t.Parallel()
	root := realTemp(t)
	dir := filepath.Join(root, "plain", "dir")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Only valid if no ancestor of the temp dir is a git repository.
	if _, err := exec.Command("git", "-C", dir, "rev-parse", "--git-dir").Output(); err == nil {
		t.Fatalf("temp dir %s is inside a git repository; test premise broken", dir)
	}
	if got := Of(dir); got != dir {
		t.Fatalf("Of(%s) = %s, want itself", dir, got)
	}
	// Symlinks are resolved: a link to dir is the same project.
	link := filepath.Join(root, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if got := Of(link); got != dir {
		t.Fatalf("Of(link) = %s, want %s", got, dir)
	}
}
