package intercom

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/intercom-dev/intercom/internal/paths"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// The pending-ack journal: acks of messages that a fetching process (a
// harness hook, `intercom wait`, `intercom inbox`) showed but could not get
// confirmed before it exited. Such a process lives for one call, so the ack
// it owes is written down where the session's other processes find it: the
// next fetch acks those messages instead of showing them again, and the
// session's holder (`intercom hold`, any held Session) retries them. One
// empty file per message: <home>/acks/<session id>/<message id>.

// journalDir is the directory of sid's journaled acks, "" when sid cannot
// name one safely.
func (c *Client) journalDir(sid string) string {
	if wire.ValidID(sid) != nil {
		return ""
	}
	return filepath.Join(c.layout.AcksDir(), sid)
}

// journalAdd writes ids down as owed for sid.
func (c *Client) journalAdd(sid string, ids []string) error {
	dir := c.journalDir(sid)
	if dir == "" {
		return nil
	}
	if err := paths.EnsurePrivateDir(dir); err != nil {
		return err
	}
	var errs []error
	for _, id := range ids {
		if !journalName(id) {
			continue
		}
		f, err := os.OpenFile(filepath.Join(dir, id), os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			err = f.Close()
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// journalList returns the ids journaled for sid.
func (c *Client) journalList(sid string) []string {
	dir := c.journalDir(sid)
	if dir == "" {
		return nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	ids := make([]string, 0, len(ents))
	for _, e := range ents {
		if journalName(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	return ids
}

func (c *Client) journalRemove(sid string, ids []string) {
	dir := c.journalDir(sid)
	if dir == "" {
		return
	}
	for _, id := range ids {
		if journalName(id) {
			_ = os.Remove(filepath.Join(dir, id))
		}
	}
	_ = os.Remove(dir) // only when empty
}

// journalName reports whether a message id is a plain file name.
func journalName(id string) bool {
	if id == "" || len(id) > 128 || id[0] == '.' {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// settleJournal sends the acks journaled for sid; confirmed ones leave the
// journal.
func (c *Client) settleJournal(ctx context.Context, sid string) error {
	ids := c.journalList(sid)
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), maxAckIDs)]
		ids = ids[len(chunk):]
		if _, err := c.Ack(ctx, sid, chunk...); err != nil && !errors.Is(err, ErrBadRequest) {
			return err
		}
		c.journalRemove(sid, chunk)
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
			if jerr := c.journalAdd(sid, append(chunk, rest...)); jerr != nil {
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
	return c.withoutOwed(req.SessionID, res.Messages), nil
}

// withoutOwed is msgs without those whose ack sid still owes (journaled):
// they were shown already.
func (c *Client) withoutOwed(sid string, msgs []wire.Message) []wire.Message {
	owed := c.journalList(sid)
	if len(owed) == 0 {
		return msgs
	}
	skip := make(map[string]bool, len(owed))
	for _, id := range owed {
		skip[id] = true
	}
	out := msgs[:0]
	for _, m := range msgs {
		if !skip[m.ID] {
			out = append(out, m)
		}
	}
	return out
}
