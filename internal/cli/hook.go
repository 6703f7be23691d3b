package cli

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/intercom-dev/intercom/internal/hooks"
	"github.com/intercom-dev/intercom/internal/mcpserver"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// HookCmd answers a harness hook.
type HookCmd struct {
	Harness string `arg:"" enum:"claude,codex" help:"claude or codex."`
	Event   string `arg:"" enum:"SessionStart,UserPromptSubmit,PostToolUse,Stop" help:"SessionStart, UserPromptSubmit, PostToolUse or Stop."`
}

// Help shows examples.
func (HookCmd) Help() string {
	return `Reads the harness's hook JSON on stdin and answers on stdout per its
contract (Claude Code and Codex share it):
  SessionStart      register or resume the session keyed by session_id, report idle
  UserPromptSubmit  report thinking; deliver waiting messages as additionalContext
  PostToolUse       report tool:<name>; deliver waiting messages as additionalContext
  Stop              report idle; if messages wait, {"decision":"block","reason":…}
Messages are acknowledged only after the answer is written. Answers are
capped at about 9,000 characters with a digest line for the rest. Broker
trouble never blocks the agent: the hook then answers nothing, exit 0.
'intercom install claude|codex' writes these hooks into the settings.

Examples:
  echo '{"session_id":"abc","hook_event_name":"PostToolUse","tool_name":"Bash","cwd":"/src"}' | intercom hook claude PostToolUse`
}

// Run answers the hook.
func (h *HookCmd) Run(e *env) error {
	in, err := hooks.Parse(e.stdin)
	if err != nil {
		return usageError{err}
	}
	sid := hooks.SessionID(h.Harness, in.SessionID)
	e.g.Session = sid
	if err := h.answer(e, in, sid); err != nil {
		// Never break the agent's turn over intercom trouble.
		fmt.Fprintf(e.stderr, "intercom hook: %v\n", err)
	}
	return nil
}

func (h *HookCmd) answer(e *env, in hooks.Input, sid string) error {
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	name := os.Getenv("INTERCOM_NAME")
	if name == "" {
		name = h.Harness + "-" + strings.ToLower(unsafeName.ReplaceAllString(filepath.Base(in.Cwd), "-"))
	}
	if err := ensureHeld(e, c, sid, name, in.Cwd); err != nil {
		return err
	}
	render := func(m wire.Message) string { return mcpserver.RenderMessage(m, e.cfg.ReplyHint) }
	deliver := func(event string, wakeOnly bool, block bool) (bool, error) {
		msgs, err := c.Inbox(e.ctx, sid, 0)
		if err != nil {
			return false, err
		}
		if wakeOnly {
			kept := msgs[:0]
			for _, m := range msgs {
				if m.Delivery != wire.DeliveryPassive {
					kept = append(kept, m)
				}
			}
			msgs = kept
		}
		text, n := hooks.Compose(msgs, render, sid)
		if n == 0 {
			return false, nil
		}
		out := hooks.ContextOutput(event, text)
		if block {
			out = hooks.BlockOutput(text)
		}
		if _, err := e.stdout.Write(out); err != nil {
			return false, err // not acknowledged: delivered next time
		}
		ids := make([]string, n)
		for i := range ids {
			ids[i] = msgs[i].ID
		}
		_, err = c.Ack(e.ctx, sid, ids...)
		return true, err
	}
	switch h.Event {
	case hooks.SessionStart:
		_, _ = c.SetState(e.ctx, sid, "idle", nil)
		intro := fmt.Sprintf("intercom: this session is %q (id %s). Other agent sessions can message you; see them with `intercom list`, message with `intercom --session %s send TARGET \"...\"`, answer asks with `intercom --session %s reply \"...\"`.", name, sid, sid, sid)
		msgs, _ := c.Inbox(e.ctx, sid, 0)
		text, n := hooks.Compose(msgs, render, sid)
		if _, err := e.stdout.Write(hooks.ContextOutput(in.HookEventName, strings.TrimSpace(intro+"\n\n"+text))); err != nil {
			return err
		}
		if n > 0 {
			ids := make([]string, n)
			for i := range ids {
				ids[i] = msgs[i].ID
			}
			_, err = c.Ack(e.ctx, sid, ids...)
		}
		return err
	case hooks.UserPromptSubmit:
		_, _ = c.SetState(e.ctx, sid, "thinking", nil)
		_, err := deliver(hooks.UserPromptSubmit, false, false)
		return err
	case hooks.PostToolUse:
		tool := strings.ReplaceAll(in.ToolName, " ", "_")
		if tool == "" {
			tool = "unknown"
		}
		_, _ = c.SetState(e.ctx, sid, "tool:"+tool, nil)
		_, err := deliver(hooks.PostToolUse, false, false)
		return err
	case hooks.Stop:
		// Idle releases queued messages; anything that would wake the agent
		// keeps it working, unless this turn was already continued by us.
		_, _ = c.SetState(e.ctx, sid, "idle", nil)
		if in.StopHookActive {
			return nil
		}
		blocked, err := deliver(hooks.Stop, true, true)
		if blocked {
			_, _ = c.SetState(e.ctx, sid, "thinking", nil)
		}
		return err
	}
	return nil
}

// ensureHeld makes sure a `intercom hold` process keeps sid connected for
// as long as the harness runs.
func ensureHeld(e *env, c *intercom.Client, sid, name, cwd string) error {
	rows, err := c.List(e.ctx, intercom.ListOptions{Scope: "all", IncludeDisconnected: true})
	if err != nil {
		return err
	}
	for _, r := range rows {
		if r.ID == sid && r.Connected {
			return nil
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	args := []string{"hold", "--id", sid, "--name", name, "--pid", strconv.Itoa(harnessPid())}
	if cwd != "" {
		args = append(args, "--cwd", cwd)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = os.Environ()
	if e.g.Home != "" {
		cmd.Env = append(cmd.Env, "INTERCOM_HOME="+e.g.Home)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start session holder: %w", err)
	}
	go func() { _ = cmd.Wait() }()
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(out).ReadString('\n')
		if err == nil && strings.HasPrefix(line, "ready") {
			ready <- nil
			return
		}
		ready <- fmt.Errorf("session holder did not start (%q)", strings.TrimSpace(line))
	}()
	select {
	case err := <-ready:
		return err
	case <-time.After(10 * time.Second):
		return fmt.Errorf("session holder did not start in 10s")
	}
}

// harnessPid is the first ancestor that is not a shell: the harness that
// runs the hook (INTERCOM_HARNESS_PID overrides).
func harnessPid() int {
	if p, err := strconv.Atoi(os.Getenv("INTERCOM_HARNESS_PID")); err == nil && p > 0 {
		return p
	}
	pid := os.Getppid()
	for range 4 {
		comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		switch strings.TrimSpace(string(comm)) {
		case "sh", "bash", "dash", "zsh", "fish", "env":
			if pp := parentOf(pid); pp > 1 {
				pid = pp
				continue
			}
		}
		break
	}
	return pid
}

func parentOf(pid int) int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	p, _ := strconv.Atoi(f[1])
	return p
}

// HoldCmd keeps a session connected while a process lives.
type HoldCmd struct {
	ID   string `name:"id" required:"" help:"Session id to register or resume."`
	Name string `help:"Session name."`
	Cwd  string `help:"Working directory to report."`
	Pid  int    `help:"Hold while this process lives (0: until signalled)."`
}

// Run holds.
func (h *HoldCmd) Run(e *env) error {
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	s, err := c.Attach(e.ctx, intercom.AttachOptions{RequestID: h.ID, Name: h.Name, Cwd: h.Cwd, NoDeliver: true})
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, "ready", s.ID())
	if f, ok := e.stdout.(*os.File); ok {
		_ = f.Close()
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-e.ctx.Done():
			return s.Detach(e.ctx)
		case <-t.C:
			if h.Pid > 0 && syscall.Kill(h.Pid, 0) != nil {
				return s.Detach(e.ctx)
			}
		}
	}
}

// WaitCmd blocks until a message arrives.
type WaitCmd struct {
	Timeout time.Duration `default:"10m" help:"Give up after this long (exit 0); 1ms to 7 days." placeholder:"DUR"`
}

// Help shows examples.
func (WaitCmd) Help() string {
	return `Blocks until a message that wakes (steer, queue when idle; not passive)
arrives for --session, prints it, acknowledges it and exits 2 ("woken with
messages", as Claude Code's asyncRewake expects). Exits 0 with no output on
timeout.

Examples:
  intercom --session worker wait --timeout 30m
  intercom --session worker --json wait`
}

// Run waits.
func (w *WaitCmd) Run(e *env) error {
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	sid, err := e.needSelf(c, "wait")
	if err != nil {
		return err
	}
	deadline := time.Now().Add(w.Timeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return nil
		}
		ready, err := c.InboxWait(e.ctx, sid, left, true)
		if err != nil {
			return err
		}
		if !ready {
			return nil
		}
		msgs, err := c.Inbox(e.ctx, sid, 0)
		if err != nil {
			return err
		}
		var wake []wire.Message
		for _, m := range msgs {
			if m.Delivery != wire.DeliveryPassive {
				wake = append(wake, m)
			}
		}
		if len(wake) == 0 {
			continue
		}
		if e.g.JSON {
			_ = e.printJSON(messagesJSON(wake))
		} else {
			text, _ := hooks.Compose(wake, func(m wire.Message) string { return mcpserver.RenderMessage(m, e.cfg.ReplyHint) }, sid)
			fmt.Fprint(e.stdout, text)
		}
		ids := make([]string, len(wake))
		for i, m := range wake {
			ids[i] = m.ID
		}
		if _, err := c.Ack(e.ctx, sid, ids...); err != nil {
			return err
		}
		return exitError{code: 2}
	}
}

// TraceCmd shows a message's delivery timeline.
type TraceCmd struct {
	ID string `arg:"" help:"Message id (from send)."`
}

// Help shows examples.
func (TraceCmd) Help() string {
	return "Shows when a message was stored (accepted), pushed to a holder or fetched, and acknowledged (delivered to the agent).\n\nExamples:\n  intercom trace m3f2a9c1d0e8b7a6c5d4\n  intercom trace m3f2a9c1d0e8b7a6c5d4 --json"
}

// Run traces.
func (t *TraceCmd) Run(e *env) error {
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	tr, err := c.Trace(e.ctx, t.ID)
	if err != nil {
		return err
	}
	if e.g.JSON {
		return e.printJSON(tr)
	}
	fmt.Fprintf(e.stdout, "message %s from %s to %s: %s\n  stored    %s\n", tr.ID, tr.From.Name, tr.To, tr.State, tr.Stored.Format(time.RFC3339Nano))
	for _, p := range tr.Pushed {
		fmt.Fprintf(e.stdout, "  pushed    %s (+%s)\n", p.Format(time.RFC3339Nano), p.Sub(tr.Stored))
	}
	for _, f := range tr.Fetched {
		fmt.Fprintf(e.stdout, "  fetched   %s (+%s)\n", f.Format(time.RFC3339Nano), f.Sub(tr.Stored))
	}
	if tr.Acked != nil {
		fmt.Fprintf(e.stdout, "  delivered %s (+%s)\n", tr.Acked.Format(time.RFC3339Nano), tr.Acked.Sub(tr.Stored))
	}
	return nil
}
