package intercom

import (
	"context"
	"errors"

	"github.com/intercom-dev/intercom/internal/ackjournal"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// The pending-ack journal (internal/ackjournal): acks of messages that a
// fetching process showed but could not get confirmed before it exited,
// written down for the session's next fetch and its holder.

func (c *Client) journal() ackjournal.Journal { return ackjournal.Journal{Dir: c.layout.AcksDir()} }

// settleJournal sends the acks journaled for sid; confirmed ones leave the
// journal.
func (c *Client) settleJournal(ctx context.Context, sid string) error {
	ids := c.journal().List(sid)
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), maxAckIDs)]
		ids = ids[len(chunk):]
		if _, err := c.Ack(ctx, sid, chunk...); err != nil && !errors.Is(err, ErrBadRequest) {
			return err
		}
		c.journal().Remove(sid, chunk)
	}
	return nil
}

// AckShown acknowledges messages of sid that this process has shown (it
// fetched them with Inbox). The ack is retried while the broker is being
// restarted; if it still is not confirmed, it is journaled, so that the
// session's next fetch and its holder ack those messages instead of showing
// them again. The error says the ack is not confirmed yet.
func (c *Client) AckShown(ctx context.Context, sid string, ids ...string) error {
	var err error
	for rest := ids; len(rest) > 0; {
		chunk := rest[:min(len(rest), maxAckIDs)]
		rest = rest[len(chunk):]
		if _, err = callRetrying[wire.AckReply](ctx, c, wire.SubjAck, wire.AckRequest{SessionID: sid, IDs: chunk}); err != nil {
			if jerr := c.journal().Add(sid, append(chunk, rest...)); jerr != nil {
				c.log.Warn("journal unconfirmed acks", "session", sid, "err", jerr)
			}
			return err
		}
	}
	return nil
}

// Inbox fetches stored messages that may be delivered now, for a consumer
// that shows them and then acks them (AckShown). Acks journaled for sid are
// sent first; messages whose ack is still owed are left out: they were
// shown already.
func (c *Client) Inbox(ctx context.Context, sessionID string, limit int) ([]wire.Message, error) {
	return c.inbox(ctx, wire.InboxRequest{SessionID: sessionID, Limit: limit})
}

// Peek is Inbox without recording a fetch: what is waiting (for a count, or
// `inbox --peek`). Journaled acks are settled and left out alike.
func (c *Client) Peek(ctx context.Context, sessionID string, limit int) ([]wire.Message, error) {
	return c.inbox(ctx, wire.InboxRequest{SessionID: sessionID, Limit: limit, Peek: true})
}

func (c *Client) inbox(ctx context.Context, req wire.InboxRequest) ([]wire.Message, error) {
	if err := c.settleJournal(ctx, req.SessionID); err != nil {
		c.log.Debug("journaled acks not confirmed", "session", req.SessionID, "err", err)
	}
	res, err := call[wire.InboxReply](ctx, c, wire.SubjInbox, req)
	if err != nil {
		return nil, err
	}
	return c.journal().Without(req.SessionID, res.Messages), nil
}
