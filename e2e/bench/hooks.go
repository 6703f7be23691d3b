package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Hooks: every tool call of every agent runs `intercom hook claude
// PostToolUse`, a new process. benchHooks times one hook (exec to exit)
// against the floor of starting a small Go program in the same run, then
// a storm: StormAgents agents, each firing a hook every StormEvery for
// StormFor while messages flow to them; every message must come out of
// exactly one hook answer.

const (
	rowHookWall   = "hook: PostToolUse process, exec → exit"
	rowHookFloor  = "hook floor: small Go program, exec → exit"
	rowStormRate  = "hook storm: hooks answered"
	rowStormCPU   = "hook storm: broker CPU per hook"
	rowStormRSS   = "hook storm: broker RSS at the end"
	rowStormMsgs  = "hook storm: messages delivered exactly once"
	floorProgram  = "package main\n\nimport \"os\"\n\nfunc main() { os.Stdout.WriteString(\"{}\\n\") }\n"
	hookStormText = "storm note %d for agent %d."
)

// resolveCLI is the intercom binary: given (INTERCOM_CLI), else built.
func resolveCLI(ctx context.Context, given, root string) (string, error) {
	if given != "" {
		p, err := exec.LookPath(given)
		if err != nil {
			return "", fmt.Errorf("intercom binary: %w", err)
		}
		return filepath.Abs(p)
	}
	dir := filepath.Join(root, "bin")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", dir+"/", "github.com/intercom-dev/intercom/cmd/intercom")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // static, as make build and the releases build it
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build intercom: %v: %s", err, out)
	}
	return filepath.Join(dir, "intercom"), nil
}

// buildFloor builds the floor program (it prints "{}", as a hook with
// nothing to say does).
func buildFloor(ctx context.Context, root string) (string, error) {
	src := filepath.Join(root, "floor-src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(floorProgram), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module floor\n\ngo 1.22\n"), 0o644); err != nil {
		return "", err
	}
	out := filepath.Join(root, "bin", "hook-floor")
	cmd := exec.CommandContext(ctx, "go", "build", "-ldflags=-s -w", "-o", out, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build floor program: %v: %s", err, b)
	}
	return out, nil
}

// hookAgent is one agent: a stand-in harness process (its pid names the
// agent's session binding) and its hook input.
type hookAgent struct {
	n       int
	harness *exec.Cmd
	env     []string
	post    []byte
	session string
}

func newHookAgent(ctx context.Context, h *procOwner, b *broker, n int) (*hookAgent, error) {
	stand := exec.CommandContext(ctx, "sleep", "3600")
	stand.SysProcAttr = childAttr()
	if err := stand.Start(); err != nil {
		return nil, err
	}
	h.adopt(&proc{name: fmt.Sprintf("harness-%d", n), pid: stand.Process.Pid})
	go func() { _ = stand.Wait() }()
	a := &hookAgent{n: n, harness: stand,
		env: append(os.Environ(), "INTERCOM_HOME="+b.layout.Home, "INTERCOM_SOCKET="+b.layout.Socket, "INTERCOM_SESSION=",
			"INTERCOM_NAME=", "CLAUDE_CODE_SESSION_ID=", fmt.Sprintf("INTERCOM_HARNESS_PID=%d", stand.Process.Pid)),
		session: fmt.Sprintf("cc-bench-agent-%03d", n)}
	hid := fmt.Sprintf("bench-agent-%03d", n)
	a.post, _ = json.Marshal(map[string]any{"session_id": hid, "hook_event_name": "PostToolUse", "tool_name": "Bash", "cwd": h.root})
	return a, nil
}

// hook runs one hook and returns its stdout and wall time.
func (a *hookAgent) hook(ctx context.Context, cli, event string, in []byte) (string, time.Duration, error) {
	cmd := exec.CommandContext(ctx, cli, "hook", "claude", event)
	cmd.Env, cmd.Stdin = a.env, bytes.NewReader(in)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	t0 := time.Now()
	err := cmd.Run()
	d := time.Since(t0)
	if err == nil && errb.Len() > 0 {
		err = fmt.Errorf("hook %s said: %s", event, strings.TrimSpace(errb.String()))
	}
	return out.String(), d, err
}

func benchHooks(ctx context.Context, h *procOwner, cfg config, r *Results) error {
	cli, err := resolveCLI(ctx, cfg.CLI, h.root)
	if err != nil {
		return err
	}
	floor, err := buildFloor(ctx, h.root)
	if err != nil {
		return err
	}
	b, err := h.startBroker(ctx, "hooks")
	if err != nil {
		return err
	}
	defer b.Stop()
	// Before the broker: the agents' holders end with their harness, and a
	// holder left without a broker would start another one.
	defer endHolders(h, b)
	one, err := newHookAgent(ctx, h, b, 0)
	if err != nil {
		return err
	}
	if err := one.start(ctx, cli); err != nil {
		return err
	}
	walls := make([]time.Duration, 0, cfg.HookN)
	floors := make([]time.Duration, 0, cfg.HookN)
	for range cfg.HookN { // alternate, so drift of the machine hits both
		_, d, err := one.hook(ctx, cli, "PostToolUse", one.post)
		if err != nil {
			return err
		}
		walls = append(walls, d)
		fc := exec.CommandContext(ctx, floor)
		fc.Stdin = bytes.NewReader(one.post)
		t0 := time.Now()
		if err := fc.Run(); err != nil {
			return fmt.Errorf("floor program: %w", err)
		}
		floors = append(floors, time.Since(t0))
	}
	r.lat(rowHookWall, "ms", walls)
	r.lat(rowHookFloor, "ms", floors)
	return hookStorm(ctx, h, cfg, r, b, cli)
}

// start runs the agent's SessionStart hook (which starts its holder).
func (a *hookAgent) start(ctx context.Context, cli string) error {
	in, _ := json.Marshal(map[string]any{"session_id": strings.TrimPrefix(a.session, "cc-"), "hook_event_name": "SessionStart", "source": "startup"})
	_, _, err := a.hook(ctx, cli, "SessionStart", in)
	return err
}

func hookStorm(ctx context.Context, h *procOwner, cfg config, r *Results, b *broker, cli string) error {
	agents := make([]*hookAgent, cfg.StormAgents)
	for i := range agents {
		a, err := newHookAgent(ctx, h, b, i+1)
		if err != nil {
			return err
		}
		if err := a.start(ctx, cli); err != nil {
			return err
		}
		agents[i] = a
	}
	sender, err := b.Connect(ctx, "storm-sender")
	if err != nil {
		return err
	}
	defer sender.Close()
	self, err := sender.Attach(ctx, intercom.AttachOptions{Name: "storm-sender"})
	if err != nil {
		return err
	}
	from := self.ID()
	var mu sync.Mutex
	seen := make([]map[string]int, len(agents)) // per agent: message text → times delivered
	for i := range seen {
		seen[i] = map[string]int{}
	}
	record := func(i int, out string) {
		mu.Lock()
		defer mu.Unlock()
		for k := range cfg.StormMsgsPer {
			text := fmt.Sprintf(hookStormText, k, i)
			if n := strings.Count(out, text); n > 0 {
				seen[i][text] += n
			}
		}
	}
	cpu0, err := b.CPU()
	if err != nil {
		return err
	}
	t0 := time.Now()
	end := t0.Add(cfg.StormFor)
	var hooks, failed int
	var wg sync.WaitGroup
	var firstErr error
	for i, a := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := time.Now()
			for time.Now().Before(end) && ctx.Err() == nil {
				if d := time.Until(next); d > 0 {
					time.Sleep(d)
				}
				next = next.Add(cfg.StormEvery)
				out, _, err := a.hook(ctx, cli, "PostToolUse", a.post)
				mu.Lock()
				hooks++
				if err != nil {
					failed++
					if firstErr == nil {
						firstErr = err
					}
				}
				mu.Unlock()
				record(i, out)
			}
		}()
	}
	// Messages flow meanwhile: StormMsgsPer to each agent, spread over the storm.
	sent := 0
	gap := cfg.StormFor / time.Duration(max(1, cfg.StormMsgsPer))
	for k := range cfg.StormMsgsPer {
		for i, a := range agents {
			if _, err := sender.Send(ctx, wire.SendRequest{From: from, To: a.session, Text: fmt.Sprintf(hookStormText, k, i)}); err != nil {
				return fmt.Errorf("storm send: %w", err)
			}
			sent++
		}
		if err := sleepCtx(ctx, gap); err != nil {
			return err
		}
	}
	wg.Wait()
	elapsed := time.Since(t0)
	cpu1, err := b.CPU()
	if err != nil {
		return err
	}
	rss, err := b.RSS()
	if err != nil {
		return err
	}
	if firstErr != nil {
		return fmt.Errorf("%d of %d storm hooks failed, first: %w", failed, hooks, firstErr)
	}
	// What is still queued comes out of the next hooks.
	for i, a := range agents {
		for try := 0; try < 20 && len(seen[i]) < cfg.StormMsgsPer; try++ {
			out, _, err := a.hook(ctx, cli, "PostToolUse", a.post)
			if err != nil {
				return err
			}
			record(i, out)
		}
	}
	once, lost, dup := 0, 0, 0
	for i := range agents {
		for k := range cfg.StormMsgsPer {
			switch n := seen[i][fmt.Sprintf(hookStormText, k, i)]; {
			case n == 0:
				lost++
			case n == 1:
				once++
			default:
				dup++
			}
		}
	}
	r.val(rowStormRate, fmt.Sprintf("hooks/s (%d agents, one every %s each)", cfg.StormAgents, cfg.StormEvery), float64(hooks)/elapsed.Seconds())
	r.val(rowStormCPU, "ms", float64(cpu1-cpu0)/float64(time.Millisecond)/float64(max(1, hooks)))
	r.val(rowStormRSS, "MiB", rss)
	r.val(rowStormMsgs, fmt.Sprintf("of %d sent", sent), float64(once))
	if lost > 0 || dup > 0 {
		return fmt.Errorf("storm: %d messages lost, %d delivered more than once, of %d", lost, dup, sent)
	}
	return nil
}

// endHolders ends the stand-in harnesses of this scenario and waits (up to
// 15 s) for the session holders their SessionStart hooks started to exit.
func endHolders(h *procOwner, b *broker) {
	h.mu.Lock()
	var stands []*proc
	for _, p := range h.procs {
		if strings.HasPrefix(p.name, "harness-") {
			stands = append(stands, p)
		}
	}
	h.mu.Unlock()
	for _, p := range stands {
		h.stop(p, time.Second)
	}
	marker := "INTERCOM_HOME=" + b.layout.Home + "\x00"
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if !holdersLeft(marker) {
			return
		}
	}
}

// holdersLeft reports whether an `intercom hold` with marker in its
// environment still runs.
func holdersLeft(marker string) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmd), "\x00hold\x00") {
			continue
		}
		if env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ")); err == nil && strings.Contains(string(env), marker) {
			return true
		}
	}
	return false
}
