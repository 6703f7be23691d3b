package agentsession

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/intercom-dev/intercom/internal/atomicfile"
	"github.com/intercom-dev/intercom/internal/proctree"
)

// Supersede makes this process the one rewake wait of session: Claude Code
// starts the asyncRewake hook at every Stop, so older waits would pile up.
// The returned context ends when a newer wait takes over, or when harness
// (if non-zero) ends.
func (s Agents) Supersede(ctx context.Context, session string, harness proctree.Proc) (context.Context, context.CancelFunc, error) {
	me, err := proctree.Get(os.Getpid())
	if err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, nil, err
	}
	path := filepath.Join(s.dir, "rewake-"+session)
	if err := atomicfile.WriteFile(path, []byte(me.Key()+"\n"), 0o600); err != nil {
		return nil, nil, fmt.Errorf("record rewake wait: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				data, err := os.ReadFile(path)
				newer := err == nil && strings.TrimSpace(string(data)) != me.Key()
				if newer || (harness.Pid > 0 && !proctree.Alive(harness)) {
					cancel()
					return
				}
			}
		}
	}()
	return ctx, func() {
		cancel()
		if data, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(data)) == me.Key() {
			os.Remove(path)
		}
	}, nil
}

// OneShot reports whether harness is a one-shot `claude -p` run (prompt on
// the command line, no stream-json input): it has no later turn to wake,
// and it waits up to 30 s for background rewake hooks before it exits.
func OneShot(harness proctree.Proc) bool {
	args, err := proctree.Args(harness.Pid)
	return err == nil && oneShot(args)
}

func oneShot(args []string) bool {
	print, stream := false, false
	for i, a := range args {
		switch {
		case a == "-p" || a == "--print":
			print = true
		case a == "--input-format=stream-json" || (a == "--input-format" && i+1 < len(args) && args[i+1] == "stream-json"):
			stream = true
		}
	}
	return print && !stream
}
