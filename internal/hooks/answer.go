package hooks

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/intercom-dev/intercom/internal/agentsession"
	"github.com/intercom-dev/intercom/internal/render"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Call is one hook call: the harness, its own name of the event, and Hold
// (Stop only: how long to wait for a waking message when none waits).
type Call struct {
	Harness, Event string
	Hold           time.Duration
}

// Client is what a hook asks of the broker: agentsession's requests, the
// wait of a Stop hook's --hold, and the home it connected to.
// *intercom.Client has it (`intercom hook`), and so has intercom-hook's
// own client (internal/hookclient).
type Client interface {
	agentsession.Client
	Home() string
	WaitInbox(ctx context.Context, sid string, timeout time.Duration, wakeOnly bool) (wire.InboxWaitReply, error)
}

// Env is what a hook call takes from the command that runs it.
type Env struct {
	// Connect opens a client of the configured home; with existing, a
	// missing home is an error (as intercom.Options.ExistingHome).
	Connect   func(existing bool) (Client, error)
	ReplyHint bool // asks carry the hint to answer them (config reply_hint)
	// DigestBytes is the size budget of one boundary's digest (config
	// digestBytes; 0 or more than MaxContext: MaxContext).
	DigestBytes int
	Stdin       io.Reader
	Stdout      io.Writer
	Stderr      io.Writer
}

// Run answers call: the harness's JSON on env.Stdin, the answer its event
// takes on env.Stdout. It never fails: a hook must never break the agent's
// turn (exit 2 would block a prompt or a tool), so every problem is one
// line on env.Stderr. For gemini the answer is always JSON (Empty when
// there is nothing to say): Gemini CLI shows a hook's stderr to the user
// when its stdout is empty.
func Run(ctx context.Context, call Call, env Env) {
	out := &countingWriter{w: env.Stdout}
	if err := answer(ctx, call, env, out); err != nil {
		fmt.Fprintf(env.Stderr, "intercom hook %s %s: %s\n", call.Harness, call.Event, render.OneLine(err.Error()))
	}
	if out.n == 0 && call.Harness == "gemini" {
		_, _ = out.Write(Empty)
	}
}

// countingWriter counts what a hook wrote on stdout.
type countingWriter struct {
	w io.Writer
	n int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += n
	return n, err
}

// hook is a call in progress: the agent's session bound, its state
// reported and its messages handed over at the boundary
// (agentsession.Boundary: one broker request, plus the acknowledgement of
// what was handed over), each answer written to out.
type hook struct {
	call    Call
	c       Client
	store   agentsession.Agents
	session string
	opts    agentsession.DeliverOptions
	out     io.Writer
	join    func() error // start the session's holder (agentsession.Join)
}

func answer(ctx context.Context, call Call, env Env, out io.Writer) error {
	event, err := Canonical(call.Harness, call.Event)
	if err != nil {
		return err
	}
	in, err := Parse(env.Stdin)
	if err != nil {
		return err
	}
	// Only SessionStart may be a first use; any later event continues a
	// session, so a missing home was deleted under it: say so, start nothing.
	c, err := env.Connect(event != SessionStart)
	if err != nil {
		return err
	}
	defer c.Close()
	store := agentsession.Open(c.Home())
	harness, err := agentsession.Harness()
	if err != nil {
		return err
	}
	req := agentsession.Request{
		Harness: call.Harness, HarnessSession: in.SessionID, FromHook: true,
		Name: os.Getenv("INTERCOM_NAME"), Cwd: in.Cwd,
	}
	b, err := store.Bind(ctx, harness, req)
	if err != nil {
		return err
	}
	h := &hook{call: call, c: c, store: store, session: b.Session, out: out,
		opts: agentsession.DeliverOptions{
			Render: func(m wire.Message) string { return render.ForAgent(m, env.ReplyHint) },
			Limit:  MaxContext, Budget: env.DigestBytes,
		},
		join: func() error { _, err := store.Join(ctx, c, c.Home(), harness, req); return err },
	}
	switch event {
	case SessionStart:
		return h.sessionStart(ctx, agentsession.Intro(b))
	case UserPromptSubmit:
		return h.deliverContext(ctx, "thinking")
	case PostToolUse:
		tool := strings.ReplaceAll(in.ToolName, " ", "_")
		if tool == "" {
			tool = "unknown"
		}
		return h.deliverContext(ctx, "tool:"+tool)
	case Stop:
		return h.stop(ctx, in.StopHookActive)
	}
	return nil
}

// boundary reports state s and hands the waiting messages over to write
// (agentsession.Boundary); when the session has no holder it starts one
// (join) and tries again.
func (h *hook) boundary(ctx context.Context, s string, opts agentsession.DeliverOptions, write func(string) error) error {
	_, held, err := h.store.Boundary(ctx, h.c, h.session, s, opts, write)
	if err != nil || held {
		return err
	}
	if err := h.join(); err != nil {
		return err
	}
	if _, held, err = h.store.Boundary(ctx, h.c, h.session, s, opts, write); err == nil && !held {
		err = fmt.Errorf("session %s has no holder even after starting one", h.session)
	}
	return err
}

// state reports the agent's state; a failure only costs the report.
func (h *hook) state(ctx context.Context, s string) { _, _ = h.c.SetState(ctx, h.session, s, nil) }

// context writes an answer that adds text to the model's context, under
// the harness's own name of the event.
func (h *hook) context(text string) error {
	_, err := h.out.Write(ContextOutput(h.call.Event, text))
	return err
}

// deliverContext reports state s and hands the waiting messages over as
// context.
func (h *hook) deliverContext(ctx context.Context, s string) error {
	return h.boundary(ctx, s, h.opts, h.context)
}

// sessionStart reports idle and tells the model intro, with the messages
// that wait, if any, in the same answer.
func (h *hook) sessionStart(ctx context.Context, intro string) error {
	wrote := false
	err := h.boundary(ctx, "idle", h.opts, func(text string) error {
		wrote = true
		return h.context(intro + "\n\n" + text)
	})
	if !wrote && err == nil {
		err = h.context(intro)
	}
	return err
}

// stop reports idle, which releases queued messages; a message that would
// wake the agent continues the turn (StopOutput) and keeps it working. Once
// this turn was continued by us (active: stop_hook_active), only the rest
// of a message already being delivered in parts may continue it: a bounded
// number of times. With Hold and nothing waking, it waits for a waking
// message up to Hold.
func (h *hook) stop(ctx context.Context, active bool) error {
	opts := h.opts
	opts.WakeOnly, opts.ContinueOnly = true, active
	blocked := false
	block := func(text string) error {
		blocked = true
		_, err := h.out.Write(StopOutput(h.call.Harness, text))
		return err
	}
	err := h.boundary(ctx, "idle", opts, block)
	if err == nil && !blocked && h.call.Hold > 0 && !active {
		err = h.holdForWake(ctx, opts, block, func() bool { return blocked })
	}
	if blocked {
		h.state(ctx, "thinking")
	}
	return err
}

// holdForWake waits up to Hold for a waking message and hands it to block
// (which sets what blocked reports); it returns with nothing when Hold
// passes.
func (h *hook) holdForWake(ctx context.Context, opts agentsession.DeliverOptions, block func(string) error, blocked func() bool) error {
	deadline := time.Now().Add(h.call.Hold)
	for left := h.call.Hold; left > 0 && !blocked(); left = time.Until(deadline) {
		res, err := h.c.WaitInbox(ctx, h.session, left, true)
		if err != nil || !res.Ready {
			return err
		}
		if _, err := h.store.Deliver(ctx, h.c, h.session, opts, block); err != nil {
			return err
		}
	}
	return nil
}
