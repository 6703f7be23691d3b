package runscmd

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/intercom-dev/intercom/internal/config"
	"github.com/intercom-dev/intercom/internal/detach"
	"github.com/intercom-dev/intercom/internal/runs"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// OwnCmd is the detached run owner.
type OwnCmd struct {
	RunID string `arg:"" name:"run"`
}

// restartGrace is how long a child being restarted has between SIGTERM and
// SIGKILL.
const restartGrace = 5 * time.Second

// owner is the state of `agent-runs own`: the run, its connection and
// output, and a restart the ladder asked for.
type owner struct {
	e       *env
	c       *intercom.Client
	out     *os.File
	id      string // the run
	session string // the child's session id
	handoff string // set while a restart waits for the old child to exit
}

// Run owns a run: registers the child's session, starts the child in its
// own process group, watches it for stalls (the --on-stuck ladder),
// records its exit and notifies the supervisor.
func (o *OwnCmd) Run(e *env) error {
	r, err := e.files.Lookup(o.RunID)
	if err != nil {
		return err
	}
	ready := detach.TakeReady() // `agent-runs start` waits on it
	ctx := context.Background() // the owner is not stopped by signals; stop kills the child
	signalIgnore()
	c, err := e.connect()
	if err != nil {
		return e.ownFailed(r, err)
	}
	defer c.Close()
	sess, err := c.Attach(ctx, intercom.AttachOptions{RequestID: r.ChildSessionID, Name: r.ChildSession, Cwd: r.Cwd, NoDeliver: true, Status: "thinking", Supervisor: r.Supervisor})
	if err != nil {
		return e.ownFailed(r, fmt.Errorf("register child session: %w", err))
	}
	out, err := os.OpenFile(r.OutputPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return e.ownFailed(r, fmt.Errorf("open output: %w", err))
	}
	defer out.Close()
	ow := &owner{e: e, c: c, out: out, id: r.ID, session: r.ChildSessionID}
	cmd, err := ow.start(r)
	if err != nil {
		return e.ownFailed(r, err)
	}
	if r, err = e.files.Update(r.ID, func(r *runs.Run) error {
		r.State, r.ChildPid, r.OwnerPid, r.StartedAt = runs.StateRunning, cmd.Process.Pid, os.Getpid(), time.Now().UTC()
		return nil
	}); err != nil {
		e.log.Error("record start", "err", err)
	}
	ready.Signal()
	cmd, werr := ow.supervise(ctx, cmd)
	code := -1
	if cmd.ProcessState != nil {
		code = cmd.ProcessState.ExitCode()
	}
	r, err = e.files.Update(r.ID, func(r *runs.Run) error {
		r.ExitCode, r.EndedAt, r.Stall = &code, time.Now().UTC(), nil
		switch {
		case r.StopRequested:
			r.State = runs.StateStopped
		case werr == nil:
			r.State = runs.StateCompleted
		default:
			r.State = runs.StateFailed
		}
		return nil
	})
	if err != nil {
		return err
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_ = sess.Detach(dctx)
	cancel()
	if !r.Wait {
		e.notify(c, r)
	}
	return nil
}

// start starts the run's saved launch in its own process group, with the
// hand-off note of a restart when there is one.
func (o *owner) start(r *runs.Run) (*exec.Cmd, error) {
	cmd := exec.Command(r.Cmd, r.Args...)
	cmd.Dir = r.Cwd
	cmd.Env = runs.ChildEnv(r, o.e.layout.Home)
	if o.handoff != "" {
		cmd.Env = append(cmd.Env, runs.EnvHandoff+"="+o.handoff)
	}
	cmd.Stdout, cmd.Stderr = o.out, o.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", r.Cmd, err)
	}
	return cmd, nil
}

// supervise waits for the child to exit, watching its session for stalls
// meanwhile and restarting it when the ladder says so; it returns the last
// child and its wait error.
func (o *owner) supervise(ctx context.Context, cmd *exec.Cmd) (*exec.Cmd, error) {
	stuck, err := o.e.cfg.Stuck(os.Getenv)
	if err != nil {
		o.e.log.Warn("stall thresholds", "err", err) // no watching, the run goes on
	}
	var tick <-chan time.Time
	if every := pollEvery(stuck); every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	r, err := o.e.files.Load(o.id)
	if err != nil {
		return cmd, cmd.Wait()
	}
	ladder := &runs.Ladder{Steps: r.OnStuck, StepAfter: stuck.StepAfter}
	for {
		exited := make(chan error, 1)
		go func(cmd *exec.Cmd) { exited <- cmd.Wait() }(cmd)
	waiting:
		for {
			select {
			case werr := <-exited:
				if o.handoff == "" && werr != nil {
					if a, ok := ladder.Exited(time.Now().UTC()); ok {
						pid := cmd.Process.Pid // what the old child left in its group goes too
						_ = runs.Terminate(pid, restartGrace, func() bool { return true })
						o.handOff(a, fmt.Sprintf("the child exited after the interrupt (%v); SIGTERM to what is left of process group %d", werr, pid))
					}
				}
				if o.handoff == "" {
					return cmd, werr
				}
				next, err := o.restart(ctx)
				if err != nil {
					o.e.log.Error("restart", "run", o.id, "err", err)
					return cmd, werr
				}
				cmd = next
				break waiting
			case <-tick:
				o.watch(ctx, ladder, cmd.Process.Pid)
			}
		}
	}
}

// pollEvery is how often the owner looks at the child's row: a quarter of
// the shortest threshold, within 20ms and 30s; 0 when no rule is on.
func pollEvery(s config.Stuck) time.Duration {
	var least time.Duration
	for _, d := range []time.Duration{s.BusyAfter, s.SteersAfter} {
		if d > 0 && (least == 0 || d < least) {
			least = d
		}
	}
	if least == 0 {
		return 0
	}
	if s.StepAfter > 0 && s.StepAfter < least {
		least = s.StepAfter
	}
	return min(max(least/4, 20*time.Millisecond), 30*time.Second)
}

// watch reads the child's row and does what the ladder says.
func (o *owner) watch(ctx context.Context, l *runs.Ladder, pid int) {
	lctx, cancel := context.WithTimeout(ctx, o.e.cfg.ListTimeout())
	rows, err := o.c.List(lctx, intercom.ListOptions{Scope: "all", ID: o.session, IncludeDisconnected: true})
	cancel()
	if err != nil || len(rows) != 1 || o.handoff != "" {
		return
	}
	for _, a := range l.Observe(rows[0], time.Now().UTC()) {
		o.act(ctx, a, pid)
	}
}

// act takes one action of the ladder and records it in the run's status
// and history.
func (o *owner) act(ctx context.Context, a runs.Action, pid int) {
	r, err := o.e.files.Load(o.id)
	if err != nil || r.StopRequested {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, o.e.cfg.SendTimeout())
	defer cancel()
	detail := a.Stall.Describe()
	switch a.Kind {
	case runs.EventStuck: // the supervisor's one notice of this stall
		if _, err := o.c.Send(sctx, wire.SendRequest{From: r.ChildSessionID, To: r.Supervisor, Text: runs.StuckNotice(r, a.Stall), Delivery: wire.DeliverySteer}); err != nil {
			detail += "; notice not sent: " + err.Error()
		}
	case runs.StepNudge:
		res, err := o.c.Send(sctx, wire.SendRequest{From: r.Supervisor, To: r.ChildSessionID, Text: runs.StuckNudge(a.Stall), Delivery: wire.DeliverySteer})
		detail = "steer " + res.ID
		if err != nil {
			detail = "not sent: " + err.Error()
		}
	case runs.StepInterrupt:
		detail = fmt.Sprintf("SIGINT to process group %d", pid)
		if err := runs.Interrupt(pid); err != nil {
			detail = err.Error()
		}
	case runs.StepRestart:
		if o.handOff(a, fmt.Sprintf("SIGTERM to process group %d", pid)) {
			_ = runs.Terminate(pid, restartGrace, func() bool { return false })
		}
		return
	}
	o.record(a, detail)
}

// handOff takes the ladder's restart step a: writes the hand-off note,
// sets it for the restart that follows the old child's exit, and records
// the step with how the old child ends (how). It reports whether the note
// was written.
func (o *owner) handOff(a runs.Action, how string) bool {
	r, err := o.e.files.Load(o.id)
	if err != nil || r.StopRequested {
		return false
	}
	path := filepath.Join(o.e.files.RunDir(o.id), fmt.Sprintf("handoff-%d.md", a.Stall.Number))
	if err := os.WriteFile(path, []byte(runs.Handoff(r, a.Stall)), 0o600); err != nil {
		o.record(a, "hand-off note not written: "+err.Error())
		return false
	}
	o.handoff = path
	o.record(a, how+"; hand-off "+path)
	return true
}

// record adds the action to the run's history and its stall to its status.
func (o *owner) record(a runs.Action, detail string) {
	if _, err := o.e.files.Update(o.id, func(r *runs.Run) error {
		r.History = append(r.History, runs.Event{At: time.Now().UTC(), Kind: a.Kind, Stall: a.Stall.Number, Detail: detail})
		r.Stall = nil
		if a.Kind != runs.EventReset {
			s := a.Stall
			r.Stall = &s
		}
		return nil
	}); err != nil {
		o.e.log.Error("record stall", "run", o.id, "err", err)
	}
}

// restart starts the saved launch again after the ladder ended the old
// child: with the hand-off note in INTERCOM_HANDOFF_FILE and in the
// child's inbox, and a boundary reported for it (a new stall starts from
// here).
func (o *owner) restart(ctx context.Context) (*exec.Cmd, error) {
	defer func() { o.handoff = "" }()
	r, err := o.e.files.Load(o.id)
	if err != nil {
		return nil, err
	}
	if r.StopRequested {
		return nil, fmt.Errorf("stop requested")
	}
	note, _ := os.ReadFile(o.handoff)
	cmd, err := o.start(r)
	if err != nil {
		return nil, err
	}
	if _, err := o.e.files.Update(o.id, func(r *runs.Run) error {
		r.ChildPid = cmd.Process.Pid
		r.Restarts++
		return nil
	}); err != nil {
		o.e.log.Error("record restart", "run", o.id, "err", err)
	}
	sctx, cancel := context.WithTimeout(ctx, o.e.cfg.SendTimeout())
	defer cancel()
	if _, err := o.c.SetState(sctx, r.ChildSessionID, "thinking", nil); err != nil {
		o.e.log.Warn("report restart", "run", o.id, "err", err)
	}
	if _, err := o.c.Send(sctx, wire.SendRequest{From: r.Supervisor, To: r.ChildSessionID, Text: string(note), Delivery: wire.DeliverySteer}); err != nil {
		o.e.log.Warn("hand-off steer", "run", o.id, "err", err)
	}
	return cmd, nil
}

// notify steers the supervisor with the completion notice.
func (e *env) notify(c *intercom.Client, r *runs.Run) {
	text := fmt.Sprintf("Subagent run finished.\nRun: %s\nAgent: %s\nChild index: %d\nState: %s\n%s\nResult: %s\nRun record: %s\n\n%s",
		r.ID, r.Agent, r.Index, r.State, exitLine(r), r.OutputPath, filepath.Join(e.files.RunDir(r.ID), "run.json"), runs.Preview(runs.Tail(r.OutputPath, 2000), 2000))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Send(ctx, wire.SendRequest{From: r.ChildSessionID, To: r.Supervisor, Text: text, Delivery: wire.DeliverySteer}); err != nil {
		e.log.Error("completion notice", "run", r.ID, "err", err)
	}
}

func exitLine(r *runs.Run) string {
	if r.ExitCode == nil {
		return "Exit code: none"
	}
	return fmt.Sprintf("Exit code: %d", *r.ExitCode)
}

func (e *env) ownFailed(r *runs.Run, cause error) error {
	_, _ = e.files.Update(r.ID, func(r *runs.Run) error {
		r.State, r.Error, r.EndedAt = runs.StateFailed, cause.Error(), time.Now().UTC()
		return nil
	})
	return cause
}
