package intercom

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// AskResult is the outcome of an ask.
type AskResult struct {
	AskID string
	To    wire.Session
	Reply *wire.Message
}

// Ask sends req as a question and waits up to timeout for the reply. The
// reply is acknowledged for req.From before it is returned. Errors:
// ErrPeerBusy (delivered, nobody will wait), ErrPeerOffline, ErrAskBusy,
// ErrAskTimeout, ErrPeerDisconnected, ErrAskerDisconnected.
func (c *Client) Ask(ctx context.Context, req wire.SendRequest, timeout time.Duration) (AskResult, error) {
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	events, err := c.AskEvents()
	if err != nil {
		return AskResult{}, fmt.Errorf("ask: %w", err)
	}
	defer events.Close()
	req.ExpectsReply = true
	req.WaitSubject = events.Subject()
	req.TimeoutMs = timeout.Milliseconds()
	sendCtx, cancel := context.WithTimeout(ctx, c.timeout)
	sent, err := c.Send(sendCtx, req)
	cancel()
	if err != nil {
		return AskResult{}, err
	}
	res := AskResult{AskID: sent.ID, To: sent.To}
	if sent.PeerBusy {
		return res, ErrPeerBusy
	}
	if sent.Held {
		return res, ErrAskHeld
	}
	waitCtx, cancelWait := context.WithTimeout(ctx, timeout)
	defer cancelWait()
	ev, err := events.Next(waitCtx, sent.ID)
	if err != nil {
		c.cancelAsk(req.From, sent.ID)
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		return res, fmt.Errorf("%w: No reply from %q within %s", ErrAskTimeout, sent.To.Target, timeout)
	}
	switch {
	case ev.Reply != nil:
		ackCtx, cancel := context.WithTimeout(context.Background(), c.timeout)
		_, _ = c.Ack(ackCtx, req.From, ev.Reply.ID)
		cancel()
		res.Reply = ev.Reply
		return res, nil
	case ev.Reason == "timeout":
		return res, fmt.Errorf("%w: No reply from %q within %s", ErrAskTimeout, sent.To.Target, timeout)
	case ev.Reason == "peer_disconnected":
		return res, fmt.Errorf("%w: Reply peer disconnected before answering: %s", ErrPeerDisconnected, sent.To.Target)
	case ev.Reason == "asker_disconnected":
		return res, fmt.Errorf("%w: session %s was detached while waiting for %s; the ask is withdrawn (attach it again and ask again)", ErrAskerDisconnected, req.From, sent.To.Target)
	default:
		return res, fmt.Errorf("ask failed: %s %s", ev.Reason, ev.Error)
	}
}

// AskEvents is a private subject on which the broker tells an asker what
// became of its asks (wire.AskEvent: the reply, a timeout, the peer
// leaving). Ask uses one per call; a wait that outlives broker restarts
// registers its Subject again after each (AskWait).
type AskEvents struct {
	subject string
	sub     *nats.Subscription
}

// AskEvents subscribes a new private subject for ask events.
func (c *Client) AskEvents() (*AskEvents, error) {
	subj := c.nc.NewRespInbox()
	sub, err := c.nc.SubscribeSync(subj)
	if err != nil {
		return nil, fmt.Errorf("subscribe to ask events: %w", err)
	}
	_ = sub.SetPendingLimits(-1, -1)
	return &AskEvents{subject: subj, sub: sub}, nil
}

// Subject is the subject to name as the WaitSubject of a send or an
// AskWait.
func (e *AskEvents) Subject() string { return e.subject }

// Next returns the next event about askID (others are skipped), or ctx's
// error when it ends first.
func (e *AskEvents) Next(ctx context.Context, askID string) (wire.AskEvent, error) {
	for {
		m, err := e.sub.NextMsgWithContext(ctx)
		if err != nil {
			return wire.AskEvent{}, err
		}
		var ev wire.AskEvent
		if json.Unmarshal(m.Data, &ev) == nil && ev.AskID == askID {
			return ev, nil
		}
	}
}

// Close ends the subscription.
func (e *AskEvents) Close() { _ = e.sub.Unsubscribe() }

func (c *Client) cancelAsk(from, askID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, _ = call[wire.Empty](ctx, c, wire.SubjAskCancel, map[string]string{"session_id": from, "ask_id": askID})
}

// AskWait (re)registers a waiter on subject for an ask sent earlier; a reply
// already stored is published to subject at once.
func (c *Client) AskWait(ctx context.Context, req wire.AskWaitRequest) error {
	_, err := call[wire.Empty](ctx, c, wire.SubjAskWait, req)
	return err
}

// CancelAsk withdraws an ask (its obligation disappears from pending).
func (c *Client) CancelAsk(ctx context.Context, from, askID string) error {
	_, err := call[wire.Empty](ctx, c, wire.SubjAskCancel, map[string]string{"session_id": from, "ask_id": askID})
	return err
}
