package ui

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

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

// ExecAnswer returns an AnswerFunc that runs `agent-runs answer` (found next
// to the running executable, else on PATH) with the given INTERCOM_HOME, so
// an answer from the UI takes exactly the CLI's path: saved durably, handed
// to a live child or reviving an exited one.
func ExecAnswer(home string) AnswerFunc {
	return func(ctx context.Context, run, qid, text string) (string, error) {
		bin := "agent-runs"
		if exe, err := os.Executable(); err == nil {
			if p := filepath.Join(filepath.Dir(exe), "agent-runs"); fileExists(p) {
				bin = p
			}
		}
		cmd := exec.CommandContext(ctx, bin, "answer", run, "--question-id", qid, text)
		cmd.Env = append(os.Environ(), "INTERCOM_HOME="+home)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			msg := strings.TrimSpace(errb.String())
			if msg == "" {
				msg = err.Error()
			}
			return "", errors.New(msg)
		}
		return strings.TrimSpace(strings.SplitN(out.String(), "\n", 2)[0]), nil
	}
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}
