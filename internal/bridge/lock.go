package bridge

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"syscall"

	"github.com/intercom-dev/intercom/internal/flock"
	"github.com/intercom-dev/intercom/internal/paths"
)

// ErrAnotherBridge: one home has one bridge (two would forward the same
// outbox and answer the same topic requests).
var ErrAnotherBridge = errors.New("another intercom-bridge is running for this home")

// Lock takes the bridge lock of the home (default home when ""), held until
// release is called or the process exits.
func Lock(home string) (release func(), err error) {
	l, err := paths.Resolve(home, "")
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(l.Home, "bridge")
	if err := paths.EnsurePrivateDir(l.Home); err != nil {
		return nil, err
	}
	if err := paths.EnsurePrivateDir(dir); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "bridge.lock")
	f, err := flock.Acquire(context.Background(), path, 0, 0)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return nil, fmt.Errorf("%w (lock %s held); stop it first", ErrAnotherBridge, path)
	}
	if err != nil {
		return nil, err
	}
	return func() { f.Close() }, nil
}
