// Package paths resolves intercom's runtime layout: the state directory
// (INTERCOM_HOME), the private socket directory and the files inside them, and
// enforces that every one of them is private to the current user.
//
// The state directory follows the XDG base-directory rule on Linux and macOS
// alike ($XDG_STATE_HOME/intercom, else ~/.local/state/intercom). The socket
// lives in a short per-home directory inside the user's runtime directory
// ($XDG_RUNTIME_DIR, or /run/user/<uid> on Linux) when that is private, else
// in the temp dir, so that its path fits the OS's sun_path (sunPathLen).
package paths

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// ErrUnsafe is wrapped by every error about a directory or file that is not
// private to the current user (symlinked, foreign-owned, not a directory).
var ErrUnsafe = errors.New("unsafe intercom path")

// ErrNoParent: an explicit state directory whose parent does not exist (a
// typo is not silently created).
var ErrNoParent = errors.New("no such directory")

// Layout names every path intercom uses for one state directory.
type Layout struct {
	Home   string // INTERCOM_HOME, mode 0700
	Socket string // broker.sock inside a private short directory
}

// Resolve builds the layout from explicit values, falling back to the
// environment (INTERCOM_HOME, INTERCOM_SOCKET, XDG_STATE_HOME, HOME).
func Resolve(home, socket string) (Layout, error) {
	if home == "" {
		home = os.Getenv("INTERCOM_HOME")
	}
	if home == "" {
		base := os.Getenv("XDG_STATE_HOME")
		if base == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return Layout{}, fmt.Errorf("resolve state dir: %w", err)
			}
			base = filepath.Join(h, ".local", "state")
		}
		home = filepath.Join(base, "intercom")
	}
	abs, err := filepath.Abs(home)
	if err != nil {
		return Layout{}, fmt.Errorf("resolve INTERCOM_HOME %q: %w", home, err)
	}
	home = filepath.Clean(abs)
	if socket == "" {
		socket = os.Getenv("INTERCOM_SOCKET")
	}
	if socket == "" {
		socket = filepath.Join(SocketDirFor(home), socketName)
	}
	return Layout{Home: home, Socket: socket}, nil
}

// socketName is the socket's file name inside SocketDirFor.
const socketName = "broker.sock"

// CheckParent refuses a state directory chosen explicitly (--home,
// INTERCOM_HOME) whose parent does not exist: it is created when missing,
// but not the directories above it, so a typo is not silently created. (The
// default location is created with its parents.)
func CheckParent(home string) error {
	if _, err := os.Stat(filepath.Dir(home)); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: INTERCOM_HOME %s: its parent %s does not exist (create it, or choose another --home)", ErrNoParent, home, filepath.Dir(home))
	}
	return nil
}

// SocketDirFor returns the private socket directory for a state directory: a
// name keyed by uid and a hash of home (two homes get two brokers), in the
// first of the user's runtime directory, the temp dir and /tmp where the
// socket path fits in sun_path.
func SocketDirFor(home string) string {
	sum := sha256.Sum256([]byte(home))
	name := "intercom-" + strconv.Itoa(os.Getuid()) + "-" + hex.EncodeToString(sum[:])[:12]
	for _, base := range socketBases() {
		if dir := filepath.Join(base, name); FitsSunPath(filepath.Join(dir, socketName)) {
			return dir
		}
	}
	return filepath.Join("/tmp", name)
}

// FitsSunPath reports whether a socket at path can be bound: its bytes and
// the terminating NUL fit in struct sockaddr_un's sun_path.
func FitsSunPath(path string) bool { return len(path) < sunPathLen }

// socketBases lists where the socket directory may go, best first: private
// runtime directories, then the temp dir and /tmp.
func socketBases() []string {
	var out []string
	for _, d := range runtimeDirs() {
		if privateRuntimeDir(d) {
			out = append(out, d)
		}
	}
	return append(out, os.TempDir(), "/tmp")
}

// privateRuntimeDir applies the XDG base-directory rule for the runtime
// directory: an absolute path to a real directory owned by the user with no
// access for anyone else.
func privateRuntimeDir(dir string) bool {
	if !filepath.IsAbs(dir) {
		return false
	}
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 {
		return false
	}
	uid, ok := owner(fi)
	return ok && uid == os.Getuid()
}

// SocketDir is the directory holding the socket.
func (l Layout) SocketDir() string { return filepath.Dir(l.Socket) }

// PidFile is the broker's pid record.
func (l Layout) PidFile() string { return filepath.Join(l.Home, "broker.pid") }

// BrokerLock is held by the running broker for its whole life.
func (l Layout) BrokerLock() string { return filepath.Join(l.Home, "broker.lock") }

// SpawnLock serialises auto-spawn attempts.
func (l Layout) SpawnLock() string { return filepath.Join(l.Home, "spawn.lock") }

// BrokerLog receives the stderr of an auto-spawned broker.
func (l Layout) BrokerLog() string { return filepath.Join(l.Home, "broker.log") }

// ConfigFile is the user configuration.
func (l Layout) ConfigFile() string { return filepath.Join(l.Home, "config.json") }

// DBDir holds the Badger database.
func (l Layout) DBDir() string { return filepath.Join(l.Home, "db") }

// RunsDir holds supervised run records.
func (l Layout) RunsDir() string { return filepath.Join(l.Home, "runs") }

// AcksDir holds, per session, acks a fetching process could not get
// confirmed (pkg/intercom's pending-ack journal).
func (l Layout) AcksDir() string { return filepath.Join(l.Home, "acks") }

// EnsurePrivateDir creates dir (and parents) if needed and checks that it is a
// real directory, not a symlink, owned by the current user; its mode is set
// to 0700.
func EnsurePrivateDir(dir string) error {
	// A home or socket dir computed from an empty or odd variable must never
	// make a filesystem root (or the current directory) private: as root,
	// chmod 0700 of / locks every other user out of the machine.
	if clean := filepath.Clean(dir); clean == "." || filepath.Dir(clean) == clean {
		return fmt.Errorf("%w: refusing to make %q a private directory", ErrUnsafe, dir)
	}
	if fi, err := os.Lstat(dir); err == nil && fi.IsDir() && fi.Mode()&(fs.ModeSymlink|fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) == 0o700 {
		if uid, ok := owner(fi); !ok || uid == os.Getuid() {
			return nil // private already: one system call, not four (a hook ensures its agents directory twice a call)
		}
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(dir), err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if err := CheckPrivateDir(dir); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("chmod %s: %w", dir, err)
	}
	return nil
}

// CheckPrivateDir verifies without changing anything that dir is a real
// directory owned by the current user.
func CheckPrivateDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("inspect %s: %w", dir, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%w: %s is a symlink", ErrUnsafe, dir)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a directory", ErrUnsafe, dir)
	}
	if uid, ok := owner(fi); ok && uid != os.Getuid() {
		return fmt.Errorf("%w: %s is owned by uid %d, not %d", ErrUnsafe, dir, uid, os.Getuid())
	}
	return nil
}

// CheckOwnedSocket verifies that path is a socket owned by the current user.
func CheckOwnedSocket(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("%w: %s is not a socket", ErrUnsafe, path)
	}
	if uid, ok := owner(fi); ok && uid != os.Getuid() {
		return fmt.Errorf("%w: socket %s is owned by uid %d, not %d", ErrUnsafe, path, uid, os.Getuid())
	}
	return nil
}

func owner(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
