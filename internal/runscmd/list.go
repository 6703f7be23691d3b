package runscmd

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/intercom-dev/intercom/internal/runs"
	"github.com/intercom-dev/intercom/internal/schema"
)

// ListCmd lists runs.
type ListCmd struct {
	All bool `help:"Every run, not only this supervisor's."`
}

// Help shows examples.
func (ListCmd) Help() string {
	return `Lists the runs of --supervisor (INTERCOM_SESSION) across working
directories, newest first; without a supervisor, or with --all, every run.

Examples:
  agent-runs --supervisor planner list
  agent-runs list --all --json`
}

func (e *env) row(r *runs.Run) schema.RunRow {
	qs, _ := e.files.Questions(r.ID)
	open := 0
	for _, q := range qs {
		if q.Unresolved() {
			open++
		}
	}
	return schema.RunRow{Run: r, OpenQuestions: open, OwnerAlive: runs.Alive(r.OwnerPid)}
}

// Run lists.
func (l *ListCmd) Run(e *env) error {
	sup, err := e.filterSupervisor(l.All)
	if err != nil {
		return err
	}
	all, err := e.files.List()
	if err != nil {
		return err
	}
	rows := []schema.RunRow{}
	for _, r := range all {
		if sup == "" || r.Supervisor == sup {
			r.Env = nil // environment values stay in run.json only
			rows = append(rows, e.row(r))
		}
	}
	if e.g.JSON {
		return e.printJSON(schema.RunList{Runs: rows})
	}
	if len(rows) == 0 {
		fmt.Fprintln(e.stdout, "No runs.")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tAGENT\tINDEX\tSTATE\tEXIT\tQUESTIONS\tSUPERVISOR\tCWD")
	for _, r := range rows {
		code := "-"
		if r.ExitCode != nil {
			code = fmt.Sprint(*r.ExitCode)
		}
		state := r.State
		if r.Stall != nil {
			state += ", stuck"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%d open\t%s\t%s\n", r.ID, r.Agent, r.Index, state, code, r.OpenQuestions, r.SupervisorName, r.Cwd)
	}
	return tw.Flush()
}

// StatusCmd shows one run.
type StatusCmd struct {
	RunID string `arg:"" name:"run" help:"Run id."`
}

// Help shows examples.
func (StatusCmd) Help() string {
	return "Examples:\n  agent-runs status 78f659a3\n  agent-runs status 78f659a3 --json"
}

// Run shows a run.
func (s *StatusCmd) Run(e *env) error {
	r, err := e.files.Lookup(s.RunID)
	if err != nil {
		return err
	}
	r.Env = nil
	qs, err := e.files.Questions(r.ID)
	if err != nil {
		return err
	}
	runs.SortQuestions(qs)
	if e.g.JSON {
		return e.printJSON(schema.RunStatus{Run: e.row(r), Questions: summaries(e.files, qs)})
	}
	row := e.row(r)
	fmt.Fprintf(e.stdout, "%s\nchild session: %s\ncommand: %s %v\ncwd: %s\nowner alive: %t\n", outcome(r), r.ChildSession, r.Cmd, r.Args, r.Cwd, row.OwnerAlive)
	if r.RevivedFrom != "" {
		fmt.Fprintf(e.stdout, "revived from: %s\n", r.RevivedFrom)
	}
	for _, q := range summaries(e.files, qs) {
		fmt.Fprintf(e.stdout, "question %s [%s] %s: %s\n", q.ID, q.State, q.Reason, q.Preview)
	}
	printStall(e.stdout, r)
	return nil
}

// printStall shows the run's --on-stuck ladder, its stall now and its
// history.
func printStall(w io.Writer, r *runs.Run) {
	if len(r.OnStuck) > 0 {
		fmt.Fprintf(w, "on stuck: %s\n", strings.Join(r.OnStuck, ","))
	}
	if r.Stall != nil {
		fmt.Fprintf(w, "stuck: stall %d, %s; steps taken: %s\n", r.Stall.Number, r.Stall.Describe(), strings.Join(r.Stall.Steps, ", "))
	}
	if r.Restarts > 0 {
		fmt.Fprintf(w, "restarts: %d\n", r.Restarts)
	}
	for _, ev := range r.History {
		fmt.Fprintf(w, "history %s stall %d %s: %s\n", ev.At.Format(time.RFC3339), ev.Stall, ev.Kind, ev.Detail)
	}
}
