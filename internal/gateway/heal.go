package gateway

import (
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/intercom-dev/intercom/internal/paths"
)

// socketCheckEvery is how often the gateway checks that its socket file is
// still in place.
const socketCheckEvery = 250 * time.Millisecond

// fileIdentity is the device and inode of a file.
type fileIdentity struct{ dev, ino uint64 }

func identityOf(path string) (fileIdentity, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return fileIdentity{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || fi.Mode()&os.ModeSocket == 0 {
		return fileIdentity{}, nil
	}
	return fileIdentity{dev: uint64(st.Dev), ino: st.Ino}, nil
}

// ownsPath reports whether the socket path is still the file our listener
// created.
func (g *Gateway) ownsPath() bool {
	id, err := identityOf(g.path)
	g.mu.Lock()
	defer g.mu.Unlock()
	return err == nil && id != (fileIdentity{}) && id == g.ident
}

// watch re-creates the socket whenever its file or directory disappears (a
// temp-dir cleaner, a user's rm): connected clients keep their connections,
// new ones find the socket again. A failure is logged once until it changes.
func (g *Gateway) watch() {
	t := time.NewTicker(socketCheckEvery)
	defer t.Stop()
	failing := ""
	for {
		select {
		case <-g.quit:
			return
		case <-t.C:
		}
		if g.ownsPath() {
			failing = ""
			continue
		}
		if err := g.recreate(); err != nil {
			if err.Error() != failing {
				g.log.Warn("cannot re-create the socket; retrying", "path", g.path, "err", err)
				failing = err.Error()
			}
			continue
		}
		failing = ""
	}
}

// recreate makes the socket directory private again (creating it, refusing
// a symlink or another user's) and listens on a new socket at the same path,
// mode 0600, then retires the old listener without unlinking the new file.
func (g *Gateway) recreate() error {
	if err := paths.EnsurePrivateDir(filepath.Dir(g.path)); err != nil {
		return err
	}
	ln, ident, err := listen(g.path, g.log)
	if err != nil {
		return err
	}
	g.mu.Lock()
	if g.ln == nil { // stopped meanwhile
		g.mu.Unlock()
		ln.Close()
		return nil
	}
	old, swapped := g.ln, g.swap
	g.ln, g.ident, g.swap = ln, ident, make(chan struct{})
	g.mu.Unlock()
	old.SetUnlinkOnClose(false)
	old.Close()
	close(swapped)
	g.log.Info("socket re-created", "path", g.path)
	return nil
}
