package gateway

import (
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/intercom-dev/intercom/internal/paths"
)

// The gateway re-creates its socket when the file or its directory goes:
// it watches the directory (inotify), and checks socketSettle after a
// change there (a directory being removed goes through several), or every
// socketCheckEvery while it cannot watch (no inotify, the directory
// missing or refused). An idle broker does not poll.
const (
	socketCheckEvery = 250 * time.Millisecond
	socketSettle     = 20 * time.Millisecond
)

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

// watchSocket re-creates the socket whenever its file or directory disappears (a
// temp-dir cleaner, a user's rm): connected clients keep their connections,
// new ones find the socket again. A failure is logged once until it changes.
func (g *Gateway) watchSocket() {
	dir := filepath.Dir(g.path)
	// A watcher of its own for each directory watched: inotify's notice
	// that an old directory's watch ended can come after the new one began.
	var w *fsnotify.Watcher
	var events <-chan fsnotify.Event
	var errs <-chan error
	unwatch := func() {
		if w != nil {
			w.Close()
			w, events, errs = nil, nil, nil
		}
	}
	defer unwatch()
	// watchDir (re)starts watching dir; false while it cannot.
	watchDir := func() bool {
		unwatch()
		if g.noWatch {
			return false
		}
		nw, err := fsnotify.NewWatcher()
		if err != nil {
			g.log.Debug("cannot watch the socket directory; polling it", "err", err)
			return false
		}
		if err := nw.Add(dir); err != nil {
			nw.Close()
			return false
		}
		w, events, errs = nw, nw.Events, nw.Errors
		return true
	}
	var poll *time.Ticker
	var pollC <-chan time.Time
	setPolling := func(on bool) {
		switch {
		case on && poll == nil:
			poll = time.NewTicker(socketCheckEvery)
			pollC = poll.C
		case !on && poll != nil:
			poll.Stop()
			poll, pollC = nil, nil
		}
	}
	var settle *time.Timer
	var settleC <-chan time.Time
	lookSoon := func() {
		if settle == nil {
			settle = time.NewTimer(socketSettle)
			settleC = settle.C
		}
	}
	defer setPolling(false)
	// Each time a watch starts, look once more: what changed before it
	// began sent no event.
	watching := watchDir()
	if watching {
		lookSoon()
	}
	setPolling(!watching)
	failing := ""
	for {
		select {
		case <-g.quit:
			if settle != nil {
				settle.Stop()
			}
			return
		case ev, ok := <-events:
			if !ok {
				unwatch()
				watching = false
				setPolling(true)
				continue
			}
			if ev.Name == dir && (ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)) {
				watching = false // the watch went with the directory
			}
			lookSoon()
			continue
		case <-errs: // an overflow: look now
		case <-settleC:
			settle, settleC = nil, nil
		case <-pollC:
		}
		if !g.ownsPath() {
			if err := g.recreate(); err != nil {
				if err.Error() != failing {
					g.log.Warn("cannot re-create the socket; retrying", "path", g.path, "err", err)
					failing = err.Error()
				}
				setPolling(true)
				continue
			}
			failing = ""
			watching = false // the directory may be a new one
		}
		if !watching {
			if watching = watchDir(); watching {
				lookSoon()
			}
		}
		setPolling(!watching || failing != "")
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
