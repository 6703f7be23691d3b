package agentsession

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/intercom-dev/intercom/internal/detach"
	"github.com/intercom-dev/intercom/internal/flock"
	"github.com/intercom-dev/intercom/internal/hookexe"
	"github.com/intercom-dev/intercom/internal/paths"
	"github.com/intercom-dev/intercom/internal/presence"
	"github.com/intercom-dev/intercom/internal/proctree"
)

// Request says who joins the agent's session.
type Request struct {
	Harness        string // claude, codex, or "" when not known
	HarnessSession string // the harness's own session id (hook input); "" elsewhere
	FromHook       bool
	Name           string // INTERCOM_NAME; "" keeps the bound name or uses DefaultName
	Cwd            string // reported when the session is created
}

// Join returns the session of harness p, binding and holding it first when
// needed: the session is registered and kept connected by a small holder
// (`intercom hold`) for as long as p runs. A hook's harness session id
// decides the session (cc-<id>, cx-<id>); a binding made before any hook
// ran (by the MCP server or a shell command) is adopted by the first hook.
func (s Agents) Join(ctx context.Context, c Client, home string, p proctree.Proc, r Request) (Binding, error) {
	unlock, err := lockFile(ctx, s.dir, p.Key()+".lock")
	if err != nil {
		return Binding{}, err
	}
	defer unlock()
	b, err := s.bindLocked(p, r)
	if err != nil {
		return b, err
	}
	return b, ensureHeld(ctx, c, home, b, r.Cwd)
}

// Bind is Join without making sure the session is held: the binding of
// harness p after r, saved. A hook binds, learns from its boundary request
// whether the session is held (Boundary), and joins only when it is not.
func (s Agents) Bind(ctx context.Context, p proctree.Proc, r Request) (Binding, error) {
	unlock, err := lockFile(ctx, s.dir, p.Key()+".lock")
	if err != nil {
		return Binding{}, err
	}
	defer unlock()
	return s.bindLocked(p, r)
}

// bindLocked is Bind under the binding's lock.
func (s Agents) bindLocked(p proctree.Proc, r Request) (Binding, error) {
	b, ok := s.Load(p)
	before := b
	if !ok {
		boot, err := proctree.Boot()
		if err != nil {
			return Binding{}, err
		}
		b = Binding{Pid: p.Pid, Start: p.Start, Boot: boot}
	}
	b = next(b, r, os.Getenv(ClaudeSessionEnv))
	if !ok || !equal(before, b) {
		if err := s.Save(b); err != nil {
			return b, err
		}
	}
	return b, nil
}

// next is binding b after request r (claudeEnv: CLAUDE_CODE_SESSION_ID).
func next(b Binding, r Request, claudeEnv string) Binding {
	b.Seen = slices.Clone(b.Seen)
	if r.Harness != "" {
		b.Harness = r.Harness
	}
	switch {
	case r.HarnessSession != "":
		want := SessionID(r.Harness, r.HarnessSession)
		if b.Session == "" || (b.Session != want && len(b.Seen) > 0) {
			b.Session = want // first binding, or a new harness session (/clear)
		}
		if len(b.Seen) == 0 || b.Seen[len(b.Seen)-1] != r.HarnessSession {
			b.Seen = append(slices.DeleteFunc(b.Seen, func(v string) bool { return v == r.HarnessSession }), r.HarnessSession)
			if len(b.Seen) > 16 {
				b.Seen = b.Seen[len(b.Seen)-16:]
			}
		}
	case b.Session != "":
	case r.Harness == "claude" && claudeEnv != "":
		// Claude Code tells every process its session id: the hooks will
		// come with the same one.
		b.Session = SessionID("claude", claudeEnv)
		b.Seen = []string{claudeEnv}
	default:
		b.Session = presence.NewID()
	}
	switch {
	case r.Name != "":
		b.Name = r.Name
	case b.Name == "":
		b.Name = DefaultName(b.Harness, r.Cwd)
	}
	b.Hooks = b.Hooks || r.FromHook
	return b
}

func equal(a, b Binding) bool {
	return a.Session == b.Session && a.Name == b.Name && a.Harness == b.Harness && a.Hooks == b.Hooks && slices.Equal(a.Seen, b.Seen)
}

// ensureHeld starts `intercom hold` for b unless its session is connected.
func ensureHeld(ctx context.Context, c Client, home string, b Binding, cwd string) error {
	if held, err := c.Connected(ctx, b.Session); err != nil || held {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("start session holder: %w", err)
	}
	exe = hookexe.CLI(exe) // intercom-hook has no hold: the intercom beside it
	args := []string{"hold", "--id", b.Session, "--name", b.Name, "--pid", strconv.Itoa(b.Pid), "--start", strconv.FormatUint(b.Start, 10)}
	if cwd != "" {
		args = append(args, "--cwd", cwd)
	}
	// The holder keeps the caller's working directory: without --cwd it
	// reports it as the session's.
	child, err := detach.Start(detach.Spec{Path: exe, Args: args, Env: append(os.Environ(), "INTERCOM_HOME="+home)})
	if err != nil {
		return fmt.Errorf("start session holder: %w", err)
	}
	if err := child.WaitReady(ctx, holderWait); err != nil {
		return fmt.Errorf("session holder did not start: %w", err)
	}
	return nil
}

// holderWait bounds how long a holder may take to register its session.
const holderWait = 10 * time.Second

// LockDelivery serialises delivery to session between the processes that
// deliver for one agent (hooks, MCP server, wait): each takes it around
// fetch, hand-over and acknowledgement, so no message is handed over twice.
func (s Agents) LockDelivery(ctx context.Context, session string) (func(), error) {
	return lockFile(ctx, s.dir, "deliver-"+session+".lock")
}

const lockWait = 15 * time.Second

// lockFile takes the lock dir/name.
func lockFile(ctx context.Context, dir, name string) (func(), error) {
	if err := paths.EnsurePrivateDir(dir); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, name)
	f, err := flock.Acquire(ctx, path, lockWait, 10*time.Millisecond)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	_ = os.Chtimes(path, now, now) // a lock in use is never pruned as stale
	return func() { f.Close() }, nil
}
