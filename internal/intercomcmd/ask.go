package intercomcmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/intercom-dev/intercom/internal/kongrun"
	"github.com/intercom-dev/intercom/internal/progress"
	"github.com/intercom-dev/intercom/internal/render"
	"github.com/intercom-dev/intercom/internal/schema"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// AskCmd sends a question and waits for the reply.
type AskCmd struct {
	To       string        `arg:"" help:"Target: name, full id or id prefix."`
	Message  []string      `arg:"" help:"Question text ('-' reads stdin)."`
	Timeout  time.Duration `help:"How long to wait, 1ms to 7 days (default: config askTimeoutMs, 2m)." placeholder:"DUR"`
	Delivery string        `enum:"steer,queue,passive," default:"" help:"steer: wait even if the peer is busy; queue: deliver when it is idle. Unset: a busy peer returns peer_busy at once. (passive is refused: it never wakes anyone.)"`
	MessageFlags
}

// Help shows examples.
func (AskCmd) Help() string {
	return `Sends a message that requests a reply and blocks until the reply arrives,
then prints it (exit 0). Fails with exit 1 and a reason: timeout, peer
disconnected (the peer ended, or went away and did not come back within
askResumeGraceMs), asker_disconnected (the --session's own holder left),
peer_busy (the peer does not accept asks now; the message was delivered
anyway), peer_offline (use send to leave it a message). A session can have
only one waiting ask. Without --session the ask holds an ephemeral
session for the duration of the wait.

Examples:
  intercom ask research "Does validate() handle null? Answer yes/no."
  intercom --session planner ask worker "Ready for step 2?" --timeout 5m
  intercom ask reviewer --delivery steer "Blocking: approve the schema change?"`
}

// Run asks.
func (a *AskCmd) Run(e *env) error {
	if _, _, err := wire.ParseDelivery(a.Delivery, "", "", true, cliDeliveryFields); err != nil {
		return kongrun.Usagef("%v (use --delivery steer or queue, or send --delivery passive)", err)
	}
	text, err := messageText(e, a.Message)
	if err != nil {
		return err
	}
	att, err := a.attachments(text)
	if err != nil {
		return err
	}
	if err := checkMessage(text, att); err != nil {
		return err
	}
	timeout := a.Timeout // 0: not given (an explicit 0 is refused while parsing)
	if timeout == 0 {
		timeout = e.cfg.AskTimeout()
	}
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	from, err := e.sender(c)
	if err != nil {
		return err
	}
	req := wire.SendRequest{From: from, To: a.To, Text: text, Delivery: a.Delivery, DeliverySet: a.Delivery != "", Attachments: att}
	stopStatus := progress.Start(e.stderr, !e.g.JSON, "waiting for "+a.To)
	res, err := c.Ask(e.ctx, req, timeout)
	stopStatus()
	if err != nil {
		if errors.Is(err, context.Canceled) {
			// Interrupted (Ctrl-C): the client withdrew the ask, so it is in
			// nobody's pending list; exit 130.
			if res.AskID != "" {
				return fmt.Errorf("ask %s interrupted; ask %s withdrawn: %w", a.To, res.AskID, err)
			}
			return fmt.Errorf("ask %s interrupted before it was sent: %w", a.To, err)
		}
		reason := askReason(err)
		if e.g.JSON && reason != "" {
			_ = e.printJSON(schema.Ask{OK: false, Reason: reason, AskID: res.AskID, To: cmp.Or(res.To.Target, a.To), Error: err.Error()})
			return kongrun.Exit(1, "")
		}
		if errors.Is(err, intercom.ErrAskHeld) {
			return fmt.Errorf("ask %s: held: it holds inbound messages; the ask %s waits for a person's approval and nobody waits for the reply (`intercom trace %s` tells)", res.To.Target, res.AskID, res.AskID)
		}
		if errors.Is(err, intercom.ErrPeerBusy) {
			return fmt.Errorf("ask %s: peer_busy: it does not accept asks now; the message %s was delivered but nobody waits for the reply (use send, or --delivery steer to wait anyway)", res.To.Target, res.AskID)
		}
		if reason != "" {
			return fmt.Errorf("ask %s: %s: %w", a.To, reason, err)
		}
		return fmt.Errorf("ask %s: %w", a.To, err)
	}
	if e.g.JSON {
		reply := toJSON(*res.Reply)
		return e.printJSON(schema.Ask{OK: true, AskID: res.AskID, To: res.To.Target, Reply: &reply})
	}
	sender := res.Reply.From
	fmt.Fprintf(e.stdout, "Reply from %s:\n\n%s\n", render.Line(sender.Name), render.Body(sender, strings.TrimRight(res.Reply.Text, "\n")))
	for _, at := range res.Reply.Attachments {
		fmt.Fprintf(e.stdout, "\n--- %s: %s ---\n%s\n", render.Line(at.Type), render.Line(at.Name), render.Body(sender, at.Content))
	}
	return nil
}

func askReason(err error) string {
	switch {
	case errors.Is(err, intercom.ErrPeerBusy):
		return "peer_busy"
	case errors.Is(err, intercom.ErrAskHeld):
		return "held"
	case errors.Is(err, intercom.ErrAskTimeout):
		return "timeout"
	case errors.Is(err, intercom.ErrPeerDisconnected):
		return "peer_disconnected"
	case errors.Is(err, intercom.ErrAskerDisconnected):
		return "asker_disconnected"
	case errors.Is(err, intercom.ErrPeerOffline):
		return "peer_offline"
	case errors.Is(err, intercom.ErrAskBusy):
		return "ask_in_progress"
	}
	return ""
}
