package runscmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/intercom-dev/intercom/internal/detach"
	"github.com/intercom-dev/intercom/internal/kongrun"
	"github.com/intercom-dev/intercom/internal/progress"
	"github.com/intercom-dev/intercom/internal/runs"
	"github.com/intercom-dev/intercom/internal/schema"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// StartCmd launches a child.
type StartCmd struct {
	Agent  string   `required:"" help:"Agent name (used in the child's session name)." placeholder:"NAME"`
	Index  *int     `help:"Child index within the run (adds -<index+1> to the session name)." placeholder:"I"`
	Wait   bool     `help:"Wait for the child to finish and print its result."`
	Output string   `help:"Write the child's output here (default runs/<run>/output.log)." placeholder:"PATH" type:"path"`
	Cmd    []string `arg:"" passthrough:"" help:"The command to run, after --."`
}

// Help shows examples.
func (StartCmd) Help() string {
	return `Starts CMD under a detached run owner that outlives this process. The child
gets INTERCOM_SUPERVISOR, INTERCOM_RUN_ID, INTERCOM_CHILD_AGENT,
INTERCOM_CHILD_INDEX, INTERCOM_SESSION (its own session, named
subagent-<agent>-<run>[-<index+1>]) and the PI_SUBAGENT_* equivalents, so it
can run 'intercom contact-supervisor'. The launch contract, output, state
(running, completed, failed, stopped) and exit code are saved under
INTERCOM_HOME/runs/<run>/. Without --wait the run id is printed at once and
the supervisor gets a steer completion notice with the result and output
paths.

Examples:
  agent-runs --supervisor planner start --agent worker -- ./worker.sh task.md
  agent-runs start --agent reviewer --index 1 --wait -- claude -p "review the diff"`
}

// Run starts.
func (s *StartCmd) Run(e *env) error {
	if len(s.Cmd) > 0 && s.Cmd[0] == "--" {
		s.Cmd = s.Cmd[1:]
	}
	if len(s.Cmd) == 0 {
		return kongrun.Usagef("start: give the command after --, e.g. agent-runs start --agent worker -- ./worker.sh")
	}
	if s.Index != nil && *s.Index < 0 {
		return kongrun.Usagef("--index must be >= 0")
	}
	bin, err := exec.LookPath(s.Cmd[0])
	if err != nil {
		return kongrun.Usagef("start: command %q: %v", s.Cmd[0], errors.Unwrap(err))
	}
	if abs, err := filepath.Abs(bin); err == nil {
		bin = abs
	}
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	sup, ok, err := e.supervisor(c)
	if err != nil {
		return err
	}
	if !ok {
		return kongrun.Usagef("start needs --supervisor or INTERCOM_SESSION: the session that receives questions and completion notices")
	}
	cwd, _ := os.Getwd()
	index := 0
	if s.Index != nil {
		index = *s.Index
	}
	id := runs.NewID()
	env := os.Environ()
	r := &runs.Run{
		ID: id, Agent: s.Agent, Index: index, Supervisor: sup.ID, SupervisorName: sup.Name,
		ChildSession: runs.ChildName(s.Agent, id, index, s.Index != nil), ChildSessionID: "child-" + id,
		Cmd: bin, Args: s.Cmd[1:], Cwd: cwd, Env: env, EnvKeys: runs.EnvKeys(env), Wait: s.Wait,
		State: runs.StateStarting, CreatedAt: time.Now().UTC(),
	}
	if err := e.files.Create(r); err != nil {
		return err
	}
	if s.Output != "" {
		if r, err = e.files.Update(id, func(r *runs.Run) error { r.OutputPath = s.Output; return nil }); err != nil {
			return err
		}
	}
	owner, err := e.launch(id)
	if err != nil {
		return err
	}
	if !s.Wait {
		// Return once the owner has recorded the launch (running, or failed).
		if err := owner.WaitReady(e.ctx, 10*time.Second); err != nil {
			e.log.Debug("run owner not ready", "run", id, "err", err)
		}
		if cur, err := e.files.Load(id); err == nil {
			r = cur
		}
		if e.g.JSON {
			return e.printJSON(schema.RunStarted{RunID: id, State: r.State, ChildSession: r.ChildSession, OutputPath: r.OutputPath, RunDir: e.files.RunDir(id)})
		}
		fmt.Fprintf(e.stdout, "%s\n", id)
		return nil
	}
	stopStatus := progress.Start(e.stderr, !e.g.JSON, fmt.Sprintf("waiting for run %s (%s)", id, s.Agent))
	select {
	case <-owner.Exited():
		stopStatus()
	case <-e.ctx.Done(): // Ctrl-C: stop waiting (exit 130); the detached run goes on
		stopStatus()
		return fmt.Errorf("stopped waiting; run %s goes on (agent-runs status %s): %w", id, id, e.ctx.Err())
	}
	final, err := e.files.Load(id)
	if err != nil {
		return err
	}
	return e.printResult(final)
}

// launch starts `agent-runs own RUN` detached (runs.OwnerLauncher).
func (e *env) launch(id string) (*detach.Child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find agent-runs: %w", err)
	}
	return runs.OwnerLauncher(exe, e.layout.Home, e.files)(id)
}

func (e *env) printResult(r *runs.Run) error {
	result := runs.Tail(r.OutputPath, 4000)
	if e.g.JSON {
		r.Env = nil // environment values stay in run.json only
		if err := e.printJSON(schema.RunResult{Run: r, Result: result}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(e.stdout, "%s\n--- output (tail) ---\n%s", outcome(r), result)
		if len(result) > 0 && result[len(result)-1] != '\n' {
			fmt.Fprintln(e.stdout)
		}
	}
	if r.State != runs.StateCompleted {
		return kongrun.Exit(1, "")
	}
	return nil
}

// OwnCmd is the detached run owner.
type OwnCmd struct {
	RunID string `arg:"" name:"run"`
}

// Run owns a run: registers the child's session, starts the child in its
// own process group, records its exit and notifies the supervisor.
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
	cmd := exec.Command(r.Cmd, r.Args...)
	cmd.Dir = r.Cwd
	cmd.Env = runs.ChildEnv(r, e.layout.Home)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return e.ownFailed(r, fmt.Errorf("start %s: %w", r.Cmd, err))
	}
	if r, err = e.files.Update(r.ID, func(r *runs.Run) error {
		r.State, r.ChildPid, r.OwnerPid, r.StartedAt = runs.StateRunning, cmd.Process.Pid, os.Getpid(), time.Now().UTC()
		return nil
	}); err != nil {
		e.log.Error("record start", "err", err)
	}
	ready.Signal()
	werr := cmd.Wait()
	code := cmd.ProcessState.ExitCode()
	r, err = e.files.Update(r.ID, func(r *runs.Run) error {
		r.ExitCode, r.EndedAt = &code, time.Now().UTC()
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
