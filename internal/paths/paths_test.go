package paths

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intercom-dev/intercom/internal/testenv"
)

func TestEnsurePrivateDirCreatesAndFixesMode(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "a", "b")
	if err := EnsurePrivateDir(dir); err != nil {
		t.Fatal(err)
	}
	if m := mode(t, dir); m != 0o700 {
		t.Fatalf("new dir mode %o, want 700", m)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := EnsurePrivateDir(dir); err != nil {
		t.Fatal(err)
	}
	if m := mode(t, dir); m != 0o700 {
		t.Fatalf("existing 0755 dir left at %o, want 700", m)
	}
}

func mode(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func TestEnsurePrivateDirRefusesSymlink(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	real := filepath.Join(root, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	err := EnsurePrivateDir(link)
	if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("EnsurePrivateDir(symlink) = %v, want ErrUnsafe mentioning symlink", err)
	}
	if m := mode(t, real); m != 0o755 {
		t.Fatalf("symlink target mode changed to %o", m)
	}
	if err := CheckPrivateDir(link); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("CheckPrivateDir(symlink) = %v", err)
	}
}

func TestEnsurePrivateDirRefusesFile(t *testing.T) {
	t.Parallel()
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := EnsurePrivateDir(f); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("EnsurePrivateDir(file) = %v, want ErrUnsafe", err)
	}
}

func TestEnsurePrivateDirRefusesForeignOwner(t *testing.T) {
	t.Parallel()
	testenv.Root(t, "the test chowns a directory to another user")
	dir := filepath.Join(t.TempDir(), "foreign")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	err := EnsurePrivateDir(dir)
	if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "owned by uid 65534") {
		t.Fatalf("EnsurePrivateDir(foreign) = %v", err)
	}
}

func TestCheckOwnedSocket(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := CheckOwnedSocket(sock); err != nil {
		t.Fatalf("own socket: %v", err)
	}
	f := filepath.Join(dir, "plain")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := CheckOwnedSocket(f); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("plain file accepted as socket: %v", err)
	}
	if err := CheckOwnedSocket(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing socket: %v", err)
	}
}

func TestResolveLayout(t *testing.T) {
	// Not parallel: it sets environment variables.
	t.Setenv("INTERCOM_HOME", "")
	t.Setenv("INTERCOM_SOCKET", "")
	t.Setenv("XDG_STATE_HOME", "/xdg/state")
	l, err := Resolve("", "")
	if err != nil {
		t.Fatal(err)
	}
	if l.Home != "/xdg/state/intercom" {
		t.Fatalf("home %s, want XDG default", l.Home)
	}
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", "/home/someone")
	if l, _ = Resolve("", ""); l.Home != "/home/someone/.local/state/intercom" {
		t.Fatalf("home %s, want ~/.local/state/intercom", l.Home)
	}
	t.Setenv("INTERCOM_HOME", "/env/home")
	if l, _ = Resolve("", ""); l.Home != "/env/home" {
		t.Fatalf("home %s, want INTERCOM_HOME", l.Home)
	}
	l, _ = Resolve("/explicit/./home/", "")
	if l.Home != "/explicit/home" {
		t.Fatalf("home %s, want cleaned explicit", l.Home)
	}
	if l.SocketDir() != SocketDirFor("/explicit/home") || filepath.Base(l.Socket) != "broker.sock" {
		t.Fatalf("socket %s", l.Socket)
	}
	if !FitsSunPath(l.Socket) {
		t.Fatalf("socket path %d bytes, over sun_path", len(l.Socket))
	}
	if l.PidFile() != "/explicit/home/broker.pid" || l.ConfigFile() != "/explicit/home/config.json" || l.DBDir() != "/explicit/home/db" {
		t.Fatalf("files %s %s %s", l.PidFile(), l.ConfigFile(), l.DBDir())
	}
	t.Setenv("INTERCOM_SOCKET", "/run/x.sock")
	if l, _ = Resolve("/h", ""); l.Socket != "/run/x.sock" {
		t.Fatalf("INTERCOM_SOCKET ignored: %s", l.Socket)
	}
}

func TestSocketDirForKeyedByHome(t *testing.T) {
	t.Parallel()
	a, b := SocketDirFor("/h/one"), SocketDirFor("/h/two")
	if a == b {
		t.Fatal("two homes share a socket dir")
	}
	if a != SocketDirFor("/h/one") {
		t.Fatal("socket dir not stable")
	}
	long := "/" + strings.Repeat("x", 500)
	if p := filepath.Join(SocketDirFor(long), "broker.sock"); !FitsSunPath(p) {
		t.Fatalf("socket path for a long home is %d bytes", len(p))
	}
}

// The longest path FitsSunPath admits can be bound; the sun_path size is
// this OS's.
func TestFitsSunPathMatchesTheKernel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pad := sunPathLen - 1 - len(dir) - 1
	if pad < 1 {
		t.Skipf("temp dir %s too long to build a %d-byte path", dir, sunPathLen-1)
	}
	p := filepath.Join(dir, strings.Repeat("s", pad))
	if !FitsSunPath(p) || FitsSunPath(p+"s") {
		t.Fatalf("FitsSunPath edge wrong at %d bytes", len(p))
	}
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Fatalf("bind a %d-byte socket path: %v", len(p), err)
	}
	ln.Close()
}

// The socket directory goes into a private $XDG_RUNTIME_DIR, and falls back
// to the temp dir when that is missing, shared, relative or too long.
func TestSocketDirPrefersPrivateRuntimeDir(t *testing.T) {
	// Not parallel: it sets XDG_RUNTIME_DIR.
	run := t.TempDir()
	if err := os.Chmod(run, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", run)
	if d := SocketDirFor("/h"); filepath.Dir(d) != run {
		t.Fatalf("socket dir %s, want it in XDG_RUNTIME_DIR %s", d, run)
	}
	fallback := func(why string) {
		t.Helper()
		if d := SocketDirFor("/h"); strings.HasPrefix(d, run) || !FitsSunPath(filepath.Join(d, "broker.sock")) {
			t.Fatalf("%s: socket dir %s, want the temp-dir fallback", why, d)
		}
	}
	if err := os.Chmod(run, 0o755); err != nil {
		t.Fatal(err)
	}
	fallback("runtime dir readable by others")
	t.Setenv("XDG_RUNTIME_DIR", "relative/run")
	fallback("relative runtime dir")
	long := filepath.Join(run, strings.Repeat("r", 100))
	if err := os.Mkdir(long, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", long)
	fallback("runtime dir too long for sun_path")
	t.Setenv("XDG_RUNTIME_DIR", filepath.Join(run, "missing"))
	fallback("missing runtime dir")
}

func TestEnsurePrivateDirRefusesARoot(t *testing.T) {
	for _, dir := range []string{"/", "", ".", "//"} {
		if err := EnsurePrivateDir(dir); !errors.Is(err, ErrUnsafe) {
			t.Errorf("EnsurePrivateDir(%q) = %v, want ErrUnsafe", dir, err)
		}
	}
}

// A directory already private is left as it is, and one that is 0700 but
// setgid or sticky, or 0750, is still set to plain 0700 (the quick check of
// an existing directory takes only exactly 0700).
func TestEnsurePrivateDirExistingModes(t *testing.T) {
	t.Parallel()
	for _, m := range []fs.FileMode{0o700, 0o700 | fs.ModeSetgid, 0o700 | fs.ModeSticky, 0o750} {
		dir := filepath.Join(t.TempDir(), "d")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, m); err != nil {
			t.Fatal(err)
		}
		if err := EnsurePrivateDir(dir); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode() & (fs.ModePerm | fs.ModeSetgid | fs.ModeSticky | fs.ModeSetuid); got != 0o700 {
			t.Errorf("EnsurePrivateDir of a %v directory left it %v", m, got)
		}
	}
}
