// Package spawn finds the broker's socket and, when no broker answers,
// starts one detached under a spawn lock so that concurrent first calls
// yield exactly one broker.
package spawn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/intercom-dev/intercom/internal/bounded"
	"github.com/intercom-dev/intercom/internal/detach"
	"github.com/intercom-dev/intercom/internal/flock"
	"github.com/intercom-dev/intercom/internal/paths"
	"github.com/intercom-dev/intercom/internal/pidfile"
	"github.com/intercom-dev/intercom/internal/unixsock"
)

// Errors callers branch on.
var (
	ErrNoBroker  = errors.New("broker unreachable")
	ErrUnhealthy = errors.New("broker is alive but its socket is unhealthy")
	// ErrHomeGone: the state directory was deleted while in use; a client
	// that was using it stops instead of starting a broker in a new, empty
	// one.
	ErrHomeGone = errors.New("intercom home is gone")
	// ErrSocketMismatch: the home's broker answers on another socket than
	// the one asked for (--socket or INTERCOM_SOCKET).
	ErrSocketMismatch = errors.New("socket mismatch")
)

// Spawner dials the broker, starting it when needed.
type Spawner struct {
	Layout    paths.Layout
	Command   string   // broker binary; "" finds intercom-broker
	Args      []string // extra arguments placed before ours
	AutoSpawn bool
	Env       []string // extra environment for the broker
	// ExistingHome: the home must exist already (the caller used it
	// before); a missing one is ErrHomeGone, not created.
	ExistingHome bool
}

// Timeouts, as pi-intercom has them.
const (
	connectTimeout = 500 * time.Millisecond
	spawnWait      = 5 * time.Second
	lockWait       = 10 * time.Second
	pollEvery      = 50 * time.Millisecond
)

// Dial connects to the broker socket, spawning a broker if none answers.
// The connection is plain system calls (package unixsock, what a hook
// process uses); a long-lived client makes a net.Conn of it.
func (sp *Spawner) Dial(ctx context.Context) (*unixsock.Conn, error) {
	c, err := sp.dialSocket()
	if err == nil || errors.Is(err, paths.ErrUnsafe) {
		return c, err
	}
	if herr := sp.checkHome(); herr != nil {
		return nil, herr
	}
	if !sp.AutoSpawn {
		return nil, err
	}
	if err := sp.ensure(ctx); err != nil {
		return nil, err
	}
	return sp.dialSocket()
}

func (sp *Spawner) dialSocket() (*unixsock.Conn, error) {
	dir := sp.Layout.SocketDir()
	if err := paths.CheckPrivateDir(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: no socket at %s", ErrNoBroker, sp.Layout.Socket)
		}
		return nil, fmt.Errorf("unsafe intercom socket directory: %w", err)
	}
	if err := paths.CheckOwnedSocket(sp.Layout.Socket); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: no socket at %s", ErrNoBroker, sp.Layout.Socket)
		}
		return nil, err
	}
	c, err := unixsock.Dial(sp.Layout.Socket, connectTimeout)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoBroker, err)
	}
	return c, nil
}

func (sp *Spawner) ensure(ctx context.Context) error {
	if err := sp.checkHome(); err != nil {
		return err
	}
	if err := paths.EnsurePrivateDir(sp.Layout.Home); err != nil {
		return err
	}
	unlock, err := acquire(ctx, sp.Layout.SpawnLock())
	if err != nil {
		return err
	}
	defer unlock()
	if c, err := sp.dialSocket(); err == nil {
		c.Close()
		return nil
	}
	if err := sp.checkPid(ctx); err != nil {
		return err
	}
	return sp.start(ctx)
}

// checkHome returns ErrHomeGone when the home must exist and does not.
func (sp *Spawner) checkHome() error {
	if !sp.ExistingHome {
		return nil
	}
	if _, err := os.Lstat(sp.Layout.Home); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s was deleted while in use; not starting a broker there", ErrHomeGone, sp.Layout.Home)
	}
	return nil
}

// checkPid refuses to start a second broker while the recorded one looks
// alive: it waits briefly (the broker may be starting or stopping), then
// reports it.
func (sp *Spawner) checkPid(ctx context.Context) error {
	deadline := time.Now().Add(2 * time.Second)
	for {
		rec, err := pidfile.Read(sp.Layout.PidFile())
		if err != nil {
			return nil // missing or unreadable: nothing proves a broker runs
		}
		v := pidfile.Judge(rec)
		if v == pidfile.Stale {
			return nil
		}
		if c, err := sp.dialSocket(); err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			if other := sp.servedSocket(rec.Pid); other != "" {
				return fmt.Errorf("%w: the broker of %s (PID %d) is healthy but serves socket %s, not %s; drop --socket/INTERCOM_SOCKET or pass --socket %s", ErrSocketMismatch, sp.Layout.Home, rec.Pid, other, sp.Layout.Socket, other)
			}
			if v == pidfile.Unprovable {
				return fmt.Errorf("%w: broker PID %d may still be running and its socket %s does not answer; if that process is not an intercom broker, remove %s", ErrUnhealthy, rec.Pid, sp.Layout.Socket, sp.Layout.PidFile())
			}
			return fmt.Errorf("%w: broker PID %d is alive but socket %s does not answer; stop it (kill %d) and retry", ErrUnhealthy, rec.Pid, sp.Layout.Socket, rec.Pid)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollEvery):
		}
	}
}

// servedSocket returns the socket that broker pid answers on when it is not
// ours: the --socket it was started with (Linux: from its command line), or
// else the home's default socket. "" when none answers.
func (sp *Spawner) servedSocket(pid int) string {
	candidates := []string{filepath.Join(paths.SocketDirFor(sp.Layout.Home), "broker.sock")}
	if data, err := bounded.ReadFile("/proc/"+strconv.Itoa(pid)+"/cmdline", "cmdline", 64<<10); err == nil {
		args := strings.Split(string(data), "\x00")
		for i, a := range args {
			if v, ok := strings.CutPrefix(a, "--socket="); ok {
				candidates = append([]string{v}, candidates...)
			} else if a == "--socket" && i+1 < len(args) {
				candidates = append([]string{args[i+1]}, candidates...)
			}
		}
	}
	for _, s := range candidates {
		if s == sp.Layout.Socket {
			continue
		}
		other := *sp
		other.Layout.Socket = s
		if c, err := other.dialSocket(); err == nil {
			c.Close()
			return s
		}
	}
	return ""
}

// acquire takes the spawn lock and writes who holds it.
func acquire(ctx context.Context, path string) (func(), error) {
	f, err := flock.Acquire(ctx, path, lockWait, pollEvery)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, fmt.Errorf("acquire spawn lock: %w", err)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"+strconv.FormatInt(time.Now().UnixMilli(), 10)+"\n"), 0)
	return func() { f.Close() }, nil
}

// BrokerPath finds the broker binary: the configured command, else
// intercom-broker beside the running executable, else on PATH.
func BrokerPath(command string) (string, error) {
	if command != "" {
		return exec.LookPath(command)
	}
	if p := os.Getenv("INTERCOM_BROKER"); p != "" {
		return exec.LookPath(p)
	}
	p, err := detach.Beside("intercom-broker")
	if err != nil {
		return "", fmt.Errorf("find broker: intercom-broker is not beside %s nor on PATH (set brokerCommand in config.json or INTERCOM_BROKER)", os.Args[0])
	}
	return p, nil
}

func (sp *Spawner) start(ctx context.Context) error {
	bin, err := BrokerPath(sp.Command)
	if err != nil {
		return err
	}
	args := append(append([]string{}, sp.Args...), "--home", sp.Layout.Home, "--socket", sp.Layout.Socket, "--log-file", sp.Layout.BrokerLog())
	var logStart int64 // what the broker logs from here on explains a failed start
	if fi, err := os.Stat(sp.Layout.BrokerLog()); err == nil {
		logStart = fi.Size()
	}
	// The broker reports readiness on a pipe (no waiting for the next poll).
	child, err := detach.Start(detach.Spec{Path: bin, Args: args, Dir: "/", Log: sp.Layout.BrokerLog(),
		Env: append(append(os.Environ(), sp.Env...), "INTERCOM_HOME="+sp.Layout.Home, "INTERCOM_SOCKET="+sp.Layout.Socket)})
	if err != nil {
		return fmt.Errorf("start broker %s: %w", bin, err)
	}
	deadline := time.Now().Add(spawnWait)
	ready := child.Ready()
	for {
		if c, err := sp.dialSocket(); err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ready:
			ready = nil // once: then poll
		case <-child.Exited():
			return fmt.Errorf("%w: spawned broker exited (%v): %s", ErrNoBroker, child.Err(), logTail(sp.Layout.BrokerLog(), logStart))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollEvery):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: spawned broker (pid %d) did not open %s within %s; see %s", ErrNoBroker, child.Pid, sp.Layout.Socket, spawnWait, sp.Layout.BrokerLog())
		}
	}
}

// logTail returns the last lines the broker logged after offset from
// (reading at most 64 KiB).
func logTail(path string, from int64) string {
	data := bytes.TrimSpace(bounded.Tail(path, from, 64<<10))
	lines := strings.Split(string(data), "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return strings.Join(lines, " | ")
}
