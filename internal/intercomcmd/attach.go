package intercomcmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/intercom-dev/intercom/internal/kongrun"
	"github.com/intercom-dev/intercom/internal/presence"
	"github.com/intercom-dev/intercom/internal/render"
	"github.com/intercom-dev/intercom/internal/schema"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// AttachCmd holds a session until killed.
type AttachCmd struct {
	Name   string `help:"Session name (default: alias session-<8 hex>)." placeholder:"NAME"`
	Resume string `help:"Take over the existing session with this id, name or id prefix; fails if it is unknown or another holder runs." placeholder:"TARGET"`
	ID     string `name:"id" help:"Take over the session with this id (8-80 of A-Z a-z 0-9 _ -), creating it if unknown; fails if another holder runs." placeholder:"ID"`
	Model  string `help:"Model label shown in list." placeholder:"LABEL"`
	Cwd    string `help:"Working directory to report (default: current)." placeholder:"DIR" type:"path"`
	// Control is for harness extensions (integrations/pi).
	Control bool `help:"With --json: acknowledge a message only when told on stdin, and take state reports there (one JSON object a line: {\"ack\":[ids]}, {\"state\":\"thinking\"}); detach at end of stdin."`
}

// Help shows examples.
func (AttachCmd) Help() string {
	return `Registers a session and holds it until interrupted (Ctrl-C, SIGTERM), printing
each arriving message and acknowledging it once printed. Unacknowledged
messages are delivered again after a reconnect or 'attach --resume'; an ack
that fails is retried (first thing after a reconnect) until the broker
confirms it, and a message shown once is never printed again by this process.

--resume ID and --id ID both take over session ID: it is resumed with its
undelivered messages, or, while another holder of it runs, attach fails
(exit 1) instead of creating another session. They differ only for an
unknown ID: --resume fails, --id creates the session with that id.

With --json the first line is {"event":"attached","id":...,"name":...} and
every later line is one JSON object per event ("message", "reconnected").

--control (with --json) is for a harness extension that hands messages to
its model itself: a message is acknowledged only by a line {"ack":[ids]} on
stdin (sent once the model received it), so one the model never saw is
delivered again when the session resumes; {"state":"tool:bash"} reports the
lifecycle (plus the configured status suffix), and the end of stdin
detaches. Message lines then carry "rendered", the text for the model.

Examples:
  intercom attach --name planner
  intercom attach --name worker --json
  intercom attach --id pi-5f0c2a91 --name pi-api --json --control
  intercom attach --resume 6332faab0c1e4f7d9a0b1c2d3e4f5a6b`
}

// resumeTarget resolves --resume like any other target (name, id or id
// prefix), preferring disconnected sessions: those are the ones to resume.
func (e *env) resumeTarget(c *intercom.Client, target string) (string, error) {
	rows, err := c.List(e.ctx, intercom.ListOptions{Scope: "all", IncludeDisconnected: true})
	if err != nil {
		return "", err
	}
	var gone []*wire.Session
	for i := range rows {
		if !rows[i].Connected {
			gone = append(gone, &rows[i])
		}
	}
	s, err := presence.Resolve(gone, target, "")
	if errors.Is(err, presence.ErrNotFound) {
		var all []*wire.Session
		for i := range rows {
			all = append(all, &rows[i])
		}
		s, err = presence.Resolve(all, target, "")
	}
	if errors.Is(err, presence.ErrNotFound) && wire.ValidID(target) == nil {
		return target, nil // an id: the broker says whether it can be resumed
	}
	if err != nil {
		return "", fmt.Errorf("attach --resume %s: %w", target, err)
	}
	return s.ID, nil
}

// Run holds the session.
func (a *AttachCmd) Run(e *env) error {
	if a.Resume != "" && a.ID != "" {
		return kongrun.Usagef("--resume cannot be combined with --id (both name the session to take over)")
	}
	if a.Control && !e.g.JSON {
		return kongrun.Usagef("--control needs --json")
	}
	if a.Name != "" {
		if err := wire.ValidateName(a.Name); err != nil {
			return kongrun.Usage(err)
		}
	}
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	reconnected := make(chan struct{}, 1)
	c.OnReconnect(func() {
		select {
		case reconnected <- struct{}{}:
		default:
		}
	})
	status := "idle"
	if e.cfg.Status != "" {
		status += " · " + e.cfg.Status
	}
	resume := a.Resume
	if resume != "" {
		if resume, err = e.resumeTarget(c, resume); err != nil {
			return err
		}
	}
	s, err := c.Attach(e.ctx, intercom.AttachOptions{Name: a.Name, ResumeID: resume, RequestID: a.ID, Exact: a.ID != "", Model: a.Model, Cwd: a.Cwd, Status: status})
	if err != nil {
		return fmt.Errorf("attach: %w", err)
	}
	info := s.Info()
	out := bufio.NewWriter(e.stdout)
	if e.g.JSON {
		_ = kongrun.PrintJSON(out, schema.Attached{
			Event: "attached", ID: info.ID, Name: info.Name, Target: info.Target,
			Cwd: info.Cwd, Project: info.Project, Resumed: s.Resumed(),
		})
	} else {
		fmt.Fprintf(out, "attached as %s (id %s, target %s); Ctrl-C to detach\n", info.Name, info.ID, info.Target)
	}
	out.Flush()
	if a.Control {
		return e.control(c, s, info, out, reconnected)
	}
	for {
		select {
		case <-e.ctx.Done():
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = s.Detach(ctx)
			cancel()
			return nil
		case <-c.Done():
			return c.Err()
		case <-reconnected:
			if e.g.JSON {
				_ = kongrun.PrintJSON(out, schema.Reconnected{Event: "reconnected", ID: info.ID, Name: info.Name})
			} else {
				fmt.Fprintf(out, "(reconnected to the broker as %s)\n", info.Name)
			}
			if err := out.Flush(); err != nil {
				return fmt.Errorf("write event: %w", err)
			}
		case m := <-s.Messages():
			if e.g.JSON {
				_ = kongrun.PrintJSON(out, toJSON(m))
			} else {
				render.Message(out, m, e.replyHint(info.Target, m))
			}
			if err := out.Flush(); err != nil {
				return fmt.Errorf("write message: %w", err) // not acked: redelivered later
			}
			if err := s.Ack(e.ctx, m.ID); err != nil && e.ctx.Err() == nil {
				e.log.Warn("ack not confirmed yet; retrying until the broker confirms it", "id", m.ID, "err", err)
			}
		}
	}
}
