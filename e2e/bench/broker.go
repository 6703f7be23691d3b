package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/intercom-dev/intercom/internal/paths"
	"github.com/intercom-dev/intercom/internal/pidfile"
	"github.com/intercom-dev/intercom/pkg/intercom"
)

// procOwner owns every process the bench starts, so that none outlives it:
// brokers started directly get Pdeathsig, auto-spawned ones are adopted by
// pid as soon as they are known, and killAll ends whatever is left.
type procOwner struct {
	root   string // temporary directory of this run
	bin    string // intercom-broker
	profil string // profile directory, "" for none

	mu    sync.Mutex
	procs map[int]*proc
}

// proc is a process the procOwner must end.
type proc struct {
	name   string
	pid    int
	layout paths.Layout
	done   chan struct{} // closed when reaped; nil when another goroutine reaps it
}

func newProcOwner() *procOwner { return &procOwner{procs: map[int]*proc{}} }

func (h *procOwner) adopt(p *proc) {
	h.mu.Lock()
	h.procs[p.pid] = p
	h.mu.Unlock()
}

func (h *procOwner) forget(p *proc) {
	h.mu.Lock()
	delete(h.procs, p.pid)
	h.mu.Unlock()
}

// killAll terminates every process still known, politely first.
func (h *procOwner) killAll() {
	h.mu.Lock()
	ps := make([]*proc, 0, len(h.procs))
	for _, p := range h.procs {
		ps = append(ps, p)
	}
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.stop(p, 3*time.Second)
		}()
	}
	wg.Wait()
}

// stop sends SIGTERM, waits up to grace for the exit (the broker writes its
// profiles and closes Badger), then SIGKILLs.
func (h *procOwner) stop(p *proc, grace time.Duration) {
	if p == nil {
		return
	}
	_ = syscall.Kill(p.pid, syscall.SIGTERM)
	if !p.wait(grace) {
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
		p.wait(5 * time.Second)
	}
	h.forget(p)
	if p.layout.Socket != "" {
		os.RemoveAll(p.layout.SocketDir())
	}
}

// wait reports whether the process is gone within d.
func (p *proc) wait(d time.Duration) bool {
	if p.done != nil {
		select {
		case <-p.done:
			return true
		case <-time.After(d):
			return false
		}
	}
	deadline := time.Now().Add(d)
	for {
		if err := syscall.Kill(p.pid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// brokerConfigs holds the config.json of scenarios that need their own.
var brokerConfigs = map[string]string{}

// broker is a broker started by the bench for one scenario.
type broker struct {
	*proc
	h  *procOwner
	up time.Duration // from exec to the socket accepting
}

// startBroker runs the broker binary on a fresh INTERCOM_HOME named after the
// scenario, with idle exit off, and waits until its socket accepts.
func (h *procOwner) startBroker(ctx context.Context, name string) (*broker, error) {
	home := filepath.Join(h.root, name)
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	conf, ok := brokerConfigs[name]
	if !ok {
		conf = `{"idleExitMs":0}`
	}
	if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(conf), 0o600); err != nil {
		return nil, err
	}
	l, err := paths.Resolve(home, "")
	if err != nil {
		return nil, err
	}
	args := []string{"--home", l.Home, "--socket", l.Socket, "--idle-exit=0"}
	if h.profil != "" {
		args = append(args,
			"--cpu-profile", filepath.Join(h.profil, name+".cpu.pprof"),
			"--mem-profile", filepath.Join(h.profil, name+".allocs.pprof"))
	}
	logf, err := os.OpenFile(filepath.Join(home, "broker.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(h.bin, args...)
	cmd.Env = append(os.Environ(), "INTERCOM_HOME="+l.Home, "INTERCOM_SOCKET="+l.Socket)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = childAttr()
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start broker: %w", err)
	}
	p := &proc{name: name, pid: cmd.Process.Pid, layout: l, done: make(chan struct{})}
	h.adopt(p)
	go func() { _ = cmd.Wait(); close(p.done) }()
	b := &broker{proc: p, h: h}
	deadline := time.Now().Add(15 * time.Second)
	for {
		if c, err := net.Dial("unix", l.Socket); err == nil {
			b.up = time.Since(t0)
			c.Close()
			return b, nil
		}
		select {
		case <-p.done:
			h.forget(p)
			return nil, fmt.Errorf("broker %s exited at start: %s", name, tailFile(filepath.Join(home, "broker.log"), 5))
		case <-ctx.Done():
			b.Stop()
			return nil, ctx.Err()
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			b.Stop()
			return nil, fmt.Errorf("broker %s did not open its socket within 15s", name)
		}
	}
}

// Stop ends the broker (gracefully, so that profiles are written).
func (b *broker) Stop() { b.h.stop(b.proc, 30*time.Second) }

// Connect opens a client to this broker (never spawning another).
func (b *broker) Connect(ctx context.Context, name string) (*intercom.Client, error) {
	return intercom.Connect(ctx, intercom.Options{
		Home: b.layout.Home, Socket: b.layout.Socket, NoSpawn: true, Name: name, Timeout: 60 * time.Second,
	})
}

// RSS returns the broker's resident set size in MiB.
func (b *broker) RSS() (float64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(b.pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) < 1 {
				break
			}
			kb, err := strconv.ParseFloat(f[0], 64)
			if err != nil {
				return 0, err
			}
			return kb / 1024, nil
		}
	}
	return 0, errors.New("no VmRSS in /proc status")
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times (100 on Linux).
const clockTicks = 100

// CPU returns the process's user+system CPU time.
func (p *proc) CPU() (time.Duration, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/stat")
	if err != nil {
		return 0, err
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("parse /proc stat")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, errors.New("parse /proc stat: short")
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

// adoptSpawned finds the broker an auto-spawning client started for layout
// (from its pid file) and takes charge of it.
func (h *procOwner) adoptSpawned(l paths.Layout) (*proc, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		rec, err := pidfile.Read(l.PidFile())
		// Only a live record naming our broker binary: never signal a
		// recycled pid.
		if err == nil && pidfile.Judge(rec) == pidfile.Live && h.isOurBroker(rec.Pid) {
			p := &proc{name: "spawned", pid: rec.Pid, layout: l}
			h.adopt(p)
			return p, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no broker pid file in %s: %v", l.Home, err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// isOurBroker reports whether pid runs the bench's broker binary.
func (h *procOwner) isOurBroker(pid int) bool {
	exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		return false
	}
	want, err := filepath.EvalSymlinks(h.bin)
	return err == nil && exe == want
}

func tailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// resolveBroker returns the broker binary to use, building it when none is
// given.
func resolveBroker(ctx context.Context, given, root string) (string, error) {
	if given != "" {
		p, err := exec.LookPath(given)
		if err != nil {
			return "", fmt.Errorf("broker binary: %w", err)
		}
		return filepath.Abs(p)
	}
	dir := filepath.Join(root, "bin")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", dir+"/", "github.com/intercom-dev/intercom/cmd/intercom-broker")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build broker: %v: %s", err, out)
	}
	return filepath.Join(dir, "intercom-broker"), nil
}
