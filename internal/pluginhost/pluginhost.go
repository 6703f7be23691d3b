// Package pluginhost holds one intercom session for a harness plugin that
// lives inside the harness's own process (OpenCode's TypeScript plugins):
// the plugin starts `intercom opencode` as a long-lived child per harness
// session and the two speak JSON lines over its stdin and stdout.
//
// The child keeps the session registered, reports its lifecycle state,
// says when a waking message waits, and hands messages over with
// agentsession.Agents.Deliver under the session's delivery lock. A message
// is acknowledged only after the plugin answers that it gave the text to
// the model ("handed"): nothing is acknowledged that the model did not
// receive.
//
// The plugin writes (one JSON object a line):
//
//	{"op":"state","state":"thinking"}          idle, thinking or tool:NAME
//	{"op":"deliver","req":1,"wake_only":false}  hand waiting messages over
//	{"op":"handed","req":1}                     the text of req 1 reached the model
//	{"op":"failed","req":1,"error":"…"}         it did not: acknowledge nothing
//
// and reads:
//
//	{"event":"ready","session":"oc-…","name":"…","intro":"…"}
//	{"event":"waiting"}                 waking messages wait (once per arrival)
//	{"event":"deliver","req":1,"text":"…"}  give this to the model, then answer
//	{"event":"done","req":1,"acked":2}      req 1 finished (error set on failure)
//	{"event":"error","error":"…"}
package pluginhost

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/intercom-dev/intercom/internal/agentsession"
	"github.com/intercom-dev/intercom/internal/hooks"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Op is one line from the plugin.
type Op struct {
	Op       string `json:"op"`
	Req      int    `json:"req,omitempty"`
	State    string `json:"state,omitempty"`
	WakeOnly bool   `json:"wake_only,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Event is one line to the plugin.
type Event struct {
	Event   string `json:"event"`
	Req     int    `json:"req,omitempty"`
	Session string `json:"session,omitempty"`
	Name    string `json:"name,omitempty"`
	Intro   string `json:"intro,omitempty"`
	Text    string `json:"text,omitempty"`
	Acked   int    `json:"acked,omitempty"`
	Error   string `json:"error,omitempty"`
}

// Host serves one held session to one plugin connection.
type Host struct {
	Client  *intercom.Client
	Session *intercom.Session
	Agents  agentsession.Agents
	Render  func(wire.Message) string
	Budget  int // the digest's size budget (config digestBytes; 0: hooks.MaxContext)
	Intro   string
	Log     *slog.Logger
	// HandTimeout bounds how long a hand-over may wait for the plugin's
	// answer; without one nothing is acknowledged (default 2 minutes).
	HandTimeout time.Duration

	outMu sync.Mutex
	out   *json.Encoder
}

// maxLine bounds one line from the plugin.
const maxLine = 1 << 20

// Serve runs until in ends (the harness went away) or ctx is done.
func (h *Host) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	if h.HandTimeout == 0 {
		h.HandTimeout = 2 * time.Minute
	}
	h.out = json.NewEncoder(out)
	h.out.SetEscapeHTML(false)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sid := h.Session.ID()
	if err := h.emit(Event{Event: "ready", Session: sid, Name: h.Session.Info().Name, Intro: h.Intro}); err != nil {
		return err
	}
	ops := make(chan Op, 64)
	answers := make(chan Op, 8)
	readErr := make(chan error, 1)
	gone := make(chan struct{}) // closed when the plugin's lines end
	go func() {
		readErr <- readOps(in, ops, answers)
		close(gone)
	}()
	delivered := make(chan struct{}, 1)
	go h.watch(ctx, sid, delivered)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-readErr:
			return err
		case <-h.Client.Done():
			return h.Client.Err()
		case op := <-ops:
			switch op.Op {
			case "state":
				if err := h.Session.SetState(ctx, op.State, nil); err != nil {
					h.Log.Warn("report state", "state", op.State, "err", err)
				}
			case "deliver":
				h.deliver(ctx, sid, op, answers, gone)
				select {
				case delivered <- struct{}{}:
				default:
				}
			default:
				_ = h.emit(Event{Event: "error", Error: fmt.Sprintf("unknown op %q", op.Op)})
			}
		}
	}
}

// deliver answers one deliver op: the text goes out, and only the
// plugin's "handed" for the same req lets Deliver acknowledge it.
func (h *Host) deliver(ctx context.Context, sid string, op Op, answers <-chan Op, gone <-chan struct{}) {
	opts := agentsession.DeliverOptions{Render: h.Render, Limit: hooks.MaxContext, Budget: h.Budget, WakeOnly: op.WakeOnly}
	b, err := h.Agents.Deliver(ctx, h.Client, sid, opts, func(text string) error {
		if err := h.emit(Event{Event: "deliver", Req: op.Req, Text: text}); err != nil {
			return err
		}
		timer := time.NewTimer(h.HandTimeout)
		defer timer.Stop()
		answer := func(a Op) (bool, error) {
			switch {
			case a.Req != op.Req:
				return false, nil // a late answer to an earlier request
			case a.Op == "failed":
				return true, fmt.Errorf("not handed to the model: %s", a.Error)
			}
			return true, nil
		}
		for {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-timer.C:
				return errors.New("the plugin did not confirm the hand-over")
			case <-gone:
				for { // its last lines may hold the answer
					select {
					case a := <-answers:
						if ok, err := answer(a); ok {
							return err
						}
					default:
						return errors.New("the plugin went away before confirming the hand-over")
					}
				}
			case a := <-answers:
				if ok, err := answer(a); ok {
					return err
				}
			}
		}
	})
	done := Event{Event: "done", Req: op.Req, Acked: len(b.Ack)}
	if err != nil {
		done.Error = err.Error()
	}
	_ = h.emit(done)
}

// watch emits "waiting" when a waking message waits, once per arrival: after
// telling, it waits for a delivery before it looks again.
func (h *Host) watch(ctx context.Context, sid string, delivered <-chan struct{}) {
	for ctx.Err() == nil {
		res, err := h.Client.WaitInbox(ctx, sid, 10*time.Minute, true)
		if err != nil {
			if ctx.Err() == nil {
				h.Log.Warn("wait for messages", "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
			continue
		}
		if !res.Ready {
			continue
		}
		if h.emit(Event{Event: "waiting"}) != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-delivered:
		}
	}
}

func (h *Host) emit(ev Event) error {
	h.outMu.Lock()
	defer h.outMu.Unlock()
	return h.out.Encode(ev)
}

// readOps splits the plugin's lines: hand-over answers to answers, the
// rest to ops. It returns at the end of in (nil) or on a read error.
func readOps(in io.Reader, ops, answers chan<- Op) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for sc.Scan() {
		var op Op
		if err := json.Unmarshal(sc.Bytes(), &op); err != nil {
			continue // not ours; the plugin never writes such lines
		}
		if op.Op == "handed" || op.Op == "failed" {
			select {
			case answers <- op:
			default: // nobody waits for so many: late answers of timed-out hand-overs
			}
		} else {
			ops <- op
		}
	}
	return sc.Err()
}
