package intercomcmd

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/intercom-dev/intercom/internal/agentsession"
	"github.com/intercom-dev/intercom/internal/hooks"
	"github.com/intercom-dev/intercom/internal/kongrun"
	"github.com/intercom-dev/intercom/internal/proctree"
	"github.com/intercom-dev/intercom/internal/render"
	"github.com/intercom-dev/intercom/internal/schema"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// WaitCmd blocks until a message arrives.
type WaitCmd struct {
	Timeout time.Duration `default:"10m" help:"Give up after this long (exit 0); 1ms to 7 days." placeholder:"DUR"`
	Rewake  bool          `help:"Run as Claude Code's asyncRewake hook: read the hook JSON on stdin, print the messages on stderr, exit 2 only when woken; every problem exits 0."`
}

// Help shows examples.
func (WaitCmd) Help() string {
	return `Blocks until a message that wakes (steer, queue when idle; not passive)
arrives for the session, prints it, acknowledges it and exits 2 ("woken with
messages", as Claude Code's asyncRewake expects). Exits 0 with no output on
timeout. It keeps waiting across a broker restart (a message stored
meanwhile wakes it), and whoever else holds the session.

Run by an agent, it waits for the agent's own session (no --session). As a
hook ('intercom install claude' adds it to Stop with asyncRewake), --rewake
prints the messages on stderr, which Claude Code hands the model.

Examples:
  intercom --session worker wait --timeout 30m
  intercom --session worker --json wait
  intercom wait --rewake --timeout 55m   # the asyncRewake hook`
}

// Run waits.
func (w *WaitCmd) Run(e *env) error {
	if !w.Rewake {
		return w.wait(e)
	}
	// A hook: exit 2 wakes the model with stderr, so nothing but messages
	// may end up there with it; every problem is exit 0.
	var in hooks.Input
	if data, err := io.ReadAll(io.LimitReader(e.stdin, hooks.MaxInput)); err == nil && len(data) > 0 {
		in, _ = hooks.Parse(strings.NewReader(string(data)))
	}
	if e.g.Session == "" && in.SessionID != "" {
		e.g.Session = agentsession.SessionID("claude", in.SessionID)
	}
	err := w.wait(e)
	var ex kongrun.ExitError
	if err != nil && !(errors.As(err, &ex) && ex.Code == 2) {
		fmt.Fprintf(e.stderr, "intercom wait: %s\n", render.OneLine(err.Error()))
		return nil
	}
	return err
}

func (w *WaitCmd) wait(e *env) error {
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	sid, err := e.needSelf(c, "wait")
	if err != nil {
		return err
	}
	agents := agentsession.Open(c.Home())
	if w.Rewake {
		// One background wait per session: a newer one (the next Stop)
		// takes over, and the wait ends with its harness.
		var harness proctree.Proc
		if b, ok := agents.Nearest(); ok && b.Session == sid {
			harness = b.Proc()
			if agentsession.OneShot(harness) {
				return nil // no later turn to wake
			}
		}
		ctx, stop, err := agents.Supersede(e.ctx, sid, harness)
		if err != nil {
			return err
		}
		defer stop()
		outer := e.ctx
		e.ctx = ctx
		defer func() { e.ctx = outer }()
	}
	deadline := time.Now().Add(w.Timeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return nil
		}
		res, err := c.WaitInbox(e.ctx, sid, left, true)
		if w.Rewake && e.ctx.Err() != nil {
			return nil // superseded, or the harness ended
		}
		if err != nil {
			return err
		}
		if !res.Ready {
			return nil
		}
		woken, err := w.deliver(e, c, agents, sid)
		if err == nil && !woken && len(res.Arrived) > 0 {
			// The session's delivering holder (attach) took them: show a
			// copy, theirs to acknowledge.
			woken, err = true, w.show(e, res.Arrived)
		}
		if err != nil {
			return err
		}
		if woken {
			return kongrun.Exit(2, "")
		}
	}
}

// show prints messages without acknowledging them.
func (w *WaitCmd) show(e *env, msgs []wire.Message) error {
	out := e.stdout
	if w.Rewake {
		out = e.stderr
	}
	if e.g.JSON {
		return kongrun.PrintJSON(out, schema.Wait{Messages: messagesJSON(msgs).Messages, HeldElsewhere: true})
	}
	fmt.Fprintf(out, "intercom: %d message(s) arrived; the session's holder took them:\n", len(msgs))
	for _, m := range msgs {
		if _, err := io.WriteString(out, e.renderer()(m)); err != nil {
			return err
		}
	}
	return nil
}

// deliver hands the waking messages over (whole in --json; composed like a
// hook's answer otherwise) and reports whether there were any.
func (w *WaitCmd) deliver(e *env, c *intercom.Client, agents agentsession.Agents, sid string) (bool, error) {
	out := e.stdout
	if w.Rewake {
		out = e.stderr
	}
	if !e.g.JSON {
		limit, budget := math.MaxInt32, 0 // whole messages for a person or a script
		if w.Rewake {
			limit, budget = hooks.MaxContext, int(e.cfg.DigestBytes) // what Claude Code shows the model whole
		}
		b, err := agents.Deliver(e.ctx, c, sid, agentsession.DeliverOptions{Render: e.renderer(), Limit: limit, Budget: budget, WakeOnly: true},
			func(text string) error { _, err := io.WriteString(out, text); return err })
		return b.Text != "", err
	}
	wake, err := agents.DeliverWhole(e.ctx, c, sid, agentsession.WholeOptions{WakeOnly: true}, func(msgs []wire.Message) error {
		if len(msgs) == 0 {
			return nil
		}
		return kongrun.PrintJSON(out, schema.Wait{Messages: messagesJSON(msgs).Messages})
	})
	if err != nil && len(wake) > 0 {
		e.log.Warn("ack not confirmed; the session's holder retries it", "err", err)
		err = nil
	}
	return len(wake) > 0, err
}
