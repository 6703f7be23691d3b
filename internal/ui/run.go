package ui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/intercom-dev/intercom/internal/runs"
	"github.com/intercom-dev/intercom/pkg/intercom"
)

// RunOptions configure Run.
type RunOptions struct {
	Options
	Name   string // the UI's session name
	Status string // status suffix from config
	Input  io.Reader
	Output io.Writer
}

// Run attaches the UI's session, runs the terminal UI until the user quits
// or ctx ends, then detaches the session.
func Run(ctx context.Context, o RunOptions) error {
	status := "idle"
	if o.Status != "" {
		status += " · " + o.Status
	}
	accepts := true
	s, err := o.Client.Attach(ctx, intercom.AttachOptions{Name: o.Name, Cwd: o.Cwd, Status: status, AcceptsAsks: &accepts, Model: "human"})
	if err != nil {
		return fmt.Errorf("attach %s: %w", o.Name, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = s.Detach(dctx)
		cancel()
	}()
	o.Session = s
	m := New(o.Options)
	defer m.Close()
	opts := []tea.ProgramOption{tea.WithContext(ctx)}
	if o.Input != nil {
		opts = append(opts, tea.WithInput(o.Input))
	}
	if o.Output != nil {
		opts = append(opts, tea.WithOutput(o.Output))
	}
	_, err = tea.NewProgram(m, opts...).Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil
	}
	return err
}

// DeskAnswer returns an AnswerFunc that answers through d, as agent-runs
// answer does: saved durably, then handed to a live child or reviving an
// exited one. It returns the receipt's note.
func DeskAnswer(d runs.Desk) AnswerFunc {
	return func(ctx context.Context, run, qid, text string) (string, error) {
		rec, err := d.Answer(ctx, run, qid, text)
		if err != nil {
			return "", err
		}
		return rec.Note, nil
	}
}
