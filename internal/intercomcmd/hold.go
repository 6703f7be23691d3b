package intercomcmd

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/intercom-dev/intercom/internal/agentsession"
	"github.com/intercom-dev/intercom/internal/detach"
	"github.com/intercom-dev/intercom/internal/proctree"
	"github.com/intercom-dev/intercom/pkg/intercom"
)

// HoldCmd keeps a session connected while a process lives.
type HoldCmd struct {
	ID    string `name:"id" required:"" help:"Session id to register or resume."`
	Name  string `help:"Session name."`
	Cwd   string `help:"Working directory to report."`
	Pid   int    `help:"Hold while this process lives (0: until signalled)."`
	Start uint64 `help:"Start stamp of --pid (package proctree); with it, also stop when the agent's binding names another session."`
}

// Help shows examples.
func (HoldCmd) Help() string {
	return "Started by hooks and the MCP server to keep an agent's session connected while its harness runs.\n\nExamples:\n  intercom hold --id cc-5f0c --name planner --pid 4242"
}

// Run holds.
func (h *HoldCmd) Run(e *env) error {
	ready := detach.TakeReady() // the hook or MCP server that started us waits on it
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	s, err := c.Attach(e.ctx, intercom.AttachOptions{RequestID: h.ID, Name: h.Name, Cwd: h.Cwd, NoDeliver: true})
	if err != nil {
		return err
	}
	if s.ID() != h.ID { // another process holds it: one holder is enough
		_ = s.Detach(e.ctx)
		return fmt.Errorf("session %s is held by another process", h.ID)
	}
	fmt.Fprintln(e.stdout, "ready", s.ID())
	if f, ok := e.stdout.(*os.File); ok {
		_ = f.Close()
	}
	ready.Signal()
	agents := agentsession.Open(c.Home())
	harness := proctree.Proc{Pid: h.Pid, Start: h.Start}
	held := func() bool {
		switch {
		case h.Pid <= 0:
			return true
		case h.Start == 0:
			return syscall.Kill(h.Pid, 0) == nil
		}
		if agents.StillBound(harness, h.ID) {
			return true
		}
		// Another harness process joined this session while it was held
		// here (it found it connected and started no holder of its own):
		// hold for that one now, or its session would go away under it.
		next, ok := agents.BoundElsewhere(harness, h.ID)
		if ok {
			harness = next
		}
		return ok
	}
	detach := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return s.Detach(ctx)
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-e.ctx.Done():
			return detach()
		case <-c.Done():
			return c.Err()
		case <-t.C:
			if !held() {
				return detach()
			}
			// Acks a hook or `wait` of this session could not get confirmed.
			if err := s.RetryAcks(e.ctx); err != nil {
				e.log.Debug("journaled acks not confirmed yet", "err", err)
			}
		}
	}
}
