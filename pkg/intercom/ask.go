package intercom

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

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
// ErrAskTimeout, ErrPeerDisconnected.
func (c *Client) Ask(ctx context.Context, req wire.SendRequest, timeout time.Duration) (AskResult, error) {
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	waitSubj := c.nc.NewRespInbox()
	sub, err := c.nc.SubscribeSync(waitSubj)
	if err != nil {
		return AskResult{}, fmt.Errorf("ask: %w", err)
	}
	defer sub.Unsubscribe()
	_ = sub.SetPendingLimits(-1, -1)
	req.ExpectsReply = true
	req.WaitSubject = waitSubj
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
	waitCtx, cancelWait := context.WithTimeout(ctx, timeout)
	defer cancelWait()
	for {
		m, err := sub.NextMsgWithContext(waitCtx)
		if err != nil {
			c.cancelAsk(req.From, sent.ID)
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			return res, fmt.Errorf("%w: No reply from %q within %s", ErrAskTimeout, sent.To.Target, timeout)
		}
		var ev wire.AskEvent
		if json.Unmarshal(m.Data, &ev) != nil || ev.AskID != sent.ID {
			continue
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
		default:
			return res, fmt.Errorf("ask failed: %s %s", ev.Reason, ev.Error)
		}
	}
}

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
