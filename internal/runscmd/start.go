package runscmd

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/intercom-dev/intercom/internal/detach"
	"github.com/intercom-dev/intercom/internal/kongrun"
	"github.com/intercom-dev/intercom/internal/progress"
	"github.com/intercom-dev/intercom/internal/runs"
	"github.com/intercom-dev/intercom/internal/schema"
)

// StartCmd launches a child.
type StartCmd struct {
	Agent   string   `required:"" help:"Agent name (used in the child's session name)." placeholder:"NAME"`
	Index   *int     `help:"Child index within the run (adds -<index+1> to the session name)." placeholder:"I"`
	Wait    bool     `help:"Wait for the child to finish and print its result."`
	Output  string   `help:"Write the child's output here (default runs/<run>/output.log)." placeholder:"PATH" type:"path"`
	OnStuck string   `name:"on-stuck" help:"When the child looks stuck, climb this ladder, one step per stuckStepAfterMs, each once per stall: some of nudge,interrupt,restart." placeholder:"STEPS"`
	Cmd     []string `arg:"" passthrough:"" help:"The command to run, after --."`
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

The supervisor gets one notice when the child looks stuck (busy with no
tool boundary for stuckAfterMs, or leaving steers unread for
stuckSteersAfterMs; see intercom list). With --on-stuck the owner also
climbs a ladder for each stall: nudge (a steer saying it looks stuck), then
interrupt (SIGINT to its process group), then restart (the saved launch
again, with a hand-off note in INTERCOM_HANDOFF_FILE and its inbox), each
step once, stuckStepAfterMs apart; the ladder resets when the child shows a
boundary again. Every step is in agent-runs status and history.

Examples:
  agent-runs --supervisor planner start --agent worker -- ./worker.sh task.md
  agent-runs start --agent reviewer --index 1 --wait -- claude -p "review the diff"
  agent-runs start --agent worker --on-stuck nudge,interrupt,restart -- ./worker.sh`
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
	onStuck, err := runs.ParseOnStuck(s.OnStuck)
	if err != nil {
		return kongrun.Usagef("%v", err)
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
		State: runs.StateStarting, CreatedAt: time.Now().UTC(), OnStuck: onStuck,
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
