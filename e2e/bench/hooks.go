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

// Hooks: every tool call of every agent runs a hook, a new process:
// `intercom-hook claude PostToolUse` (what install writes when it sits
// beside intercom) or `intercom hook claude PostToolUse`. benchHooks times
// both (exec to exit, and the process's CPU, user + system) against the
// floor of starting a small Go program in the same run, alternating, then
// a storm: StormAgents agents, each firing an intercom-hook every
// StormEvery for StormFor while messages flow to them; every message must
// come out of exactly one hook answer.

const (
	rowHookWall   = "hook: intercom-hook PostToolUse, exec → exit"
	rowHookCLI    = "hook: intercom hook PostToolUse, exec → exit"
	rowHookFloor  = "hook floor: small Go program, exec → exit"
	rowHookCPU    = "hook CPU: intercom-hook PostToolUse, user+sys"
	rowHookCLICPU = "hook CPU: intercom hook PostToolUse, user+sys"
	rowFloorCPU   = "hook floor CPU: small Go program, user+sys"
	rowReqFloor   = "hook floor: small Go program asking the broker once (ic.v1.ping), exec → exit"
	rowReqCPU     = "hook floor CPU: small Go program asking the broker once, user+sys"
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

// resolveHookExe is the intercom-hook beside cli, else built beside it
// (into root/bin when cli's directory is not ours to write).
func resolveHookExe(ctx context.Context, cli, root string) (string, error) {
	p := filepath.Join(filepath.Dir(cli), "intercom-hook")
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	p = filepath.Join(root, "bin", "intercom-hook")
	cmd := exec.CommandContext(ctx, "go", "build", "-ldflags=-s -w", "-o", p, "github.com/intercom-dev/intercom/cmd/intercom-hook")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build intercom-hook: %v: %s", err, out)
	}
	return p, nil
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

// buildRequestFloor builds e2e/bench/requestfloor: the floor program plus
// one request to the broker, with bare system calls (what intercom-hook
// cannot do without).
func buildRequestFloor(ctx context.Context, root string) (string, error) {
	out := filepath.Join(root, "bin", "hook-request-floor")
	cmd := exec.CommandContext(ctx, "go", "build", "-ldflags=-s -w", "-o", out, "github.com/intercom-dev/intercom/e2e/bench/requestfloor")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build request floor program: %v: %s", err, b)
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

// hookCmd is how a hook is run: intercom-hook HARNESS EVENT, or intercom
// hook HARNESS EVENT.
type hookCmd struct {
	exe string
	sub bool // the intercom CLI: the hook subcommand
}

func (c hookCmd) args(event string) []string {
	if c.sub {
		return []string{"hook", "claude", event}
	}
	return []string{"claude", event}
}

// hook runs one hook and returns its stdout and wall time.
func (a *hookAgent) hook(ctx context.Context, hc hookCmd, event string, in []byte) (string, time.Duration, error) {
	out, d, _, err := a.hookTimed(ctx, hc, event, in)
	return out, d, err
}

// hookTimed is hook that also returns the process's CPU (user + system).
func (a *hookAgent) hookTimed(ctx context.Context, hc hookCmd, event string, in []byte) (string, time.Duration, time.Duration, error) {
	cmd := exec.CommandContext(ctx, hc.exe, hc.args(event)...)
	cmd.Env, cmd.Stdin = a.env, bytes.NewReader(in)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	t0 := time.Now()
	err := cmd.Run()
	d := time.Since(t0)
	if err == nil && errb.Len() > 0 {
		err = fmt.Errorf("hook %s said: %s", event, strings.TrimSpace(errb.String()))
	}
	return out.String(), d, processCPU(cmd), err
}

// processCPU is an exited command's user + system time.
func processCPU(cmd *exec.Cmd) time.Duration {
	if cmd.ProcessState == nil {
		return 0
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

func benchHooks(ctx context.Context, h *procOwner, cfg config, r *Results) error {
	cliPath, err := resolveCLI(ctx, cfg.CLI, h.root)
	if err != nil {
		return err
	}
	hookPath, err := resolveHookExe(ctx, cliPath, h.root)
	if err != nil {
		return err
	}
	cli, hook := hookCmd{exe: cliPath, sub: true}, hookCmd{exe: hookPath}
	floor, err := buildFloor(ctx, h.root)
	if err != nil {
		return err
	}
	reqFloor, err := buildRequestFloor(ctx, h.root)
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
	if err := one.start(ctx, hook); err != nil {
		return err
	}
	var walls, cliWalls, floors, cpus, cliCPUs, floorCPUs, reqFloors, reqCPUs []time.Duration
	for range cfg.HookN { // alternate, so drift of the machine hits all four
		_, d, cpu, err := one.hookTimed(ctx, hook, "PostToolUse", one.post)
		if err != nil {
			return err
		}
		walls, cpus = append(walls, d), append(cpus, cpu)
		_, d, cpu, err = one.hookTimed(ctx, cli, "PostToolUse", one.post)
		if err != nil {
			return err
		}
		cliWalls, cliCPUs = append(cliWalls, d), append(cliCPUs, cpu)
		fc := exec.CommandContext(ctx, floor)
		fc.Stdin = bytes.NewReader(one.post)
		t0 := time.Now()
		if err := fc.Run(); err != nil {
			return fmt.Errorf("floor program: %w", err)
		}
		floors, floorCPUs = append(floors, time.Since(t0)), append(floorCPUs, processCPU(fc))
		rc := exec.CommandContext(ctx, reqFloor)
		rc.Env, rc.Stdin = one.env, bytes.NewReader(one.post)
		t0 = time.Now()
		if out, err := rc.CombinedOutput(); err != nil {
			return fmt.Errorf("request floor program: %w: %s", err, out)
		}
		reqFloors, reqCPUs = append(reqFloors, time.Since(t0)), append(reqCPUs, processCPU(rc))
	}
	r.lat(rowHookWall, "ms", walls)
	r.lat(rowHookCLI, "ms", cliWalls)
	r.lat(rowHookFloor, "ms", floors)
	r.lat(rowHookCPU, "ms", cpus)
	r.lat(rowHookCLICPU, "ms", cliCPUs)
	r.lat(rowFloorCPU, "ms", floorCPUs)
	r.lat(rowReqFloor, "ms", reqFloors)
	r.lat(rowReqCPU, "ms", reqCPUs)
	// Within one run: the machine is shared and noisy, ratios are what compare.
	if f := median(floors); f > 0 {
		r.Ratios["hook_p50_vs_floor"] = round3(float64(median(walls)) / float64(f))
		r.Ratios["hook_cli_p50_vs_floor"] = round3(float64(median(cliWalls)) / float64(f))
	}
	if f := median(floorCPUs); f > 0 {
		r.Ratios["hook_cpu_p50_vs_floor"] = round3(float64(median(cpus)) / float64(f))
	}
	if f := median(reqFloors); f > 0 {
		r.Ratios["hook_p50_vs_request_floor"] = round3(float64(median(walls)) / float64(f))
	}
	if f := median(reqCPUs); f > 0 {
		r.Ratios["hook_cpu_p50_vs_request_floor"] = round3(float64(median(cpus)) / float64(f))
	}
	return hookStorm(ctx, h, cfg, r, b, hook)
}

// start runs the agent's SessionStart hook (which starts its holder).
func (a *hookAgent) start(ctx context.Context, cli hookCmd) error {
	in, _ := json.Marshal(map[string]any{"session_id": strings.TrimPrefix(a.session, "cc-"), "hook_event_name": "SessionStart", "source": "startup"})
	_, _, err := a.hook(ctx, cli, "SessionStart", in)
	return err
}

func hookStorm(ctx context.Context, h *procOwner, cfg config, r *Results, b *broker, cli hookCmd) error {
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
