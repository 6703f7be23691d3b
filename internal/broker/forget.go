package broker

import (
	"fmt"

	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Forgetting a session: `intercom forget`, the sweep of gc.go, and the end
// of an ephemeral session drop it from memory and its inbox from the store.

// forget removes a disconnected session and its inbox.
func (b *Broker) forget(req wire.SessionRef) (*wire.Empty, error) {
	if _, _, remote := wire.SplitRemote(req.SessionID); remote {
		return b.forgetRemote(req.SessionID)
	}
	s, err := b.sessions.forget(req.SessionID)
	if err != nil {
		return nil, err
	}
	b.sends.forgetTarget(s.ID)
	if err := b.dropInbox(s.ID); err != nil {
		return nil, err
	}
	if err := b.dropSubscriptions(s.ID); err != nil {
		return nil, err
	}
	if err := b.forgetHistory(s.ID); err != nil {
		return nil, err
	}
	b.log.Info("session forgotten", "id", s.ID, "name", s.Name)
	return &wire.Empty{}, nil
}

// dropInboxChunk is how many messages one transaction of dropInbox deletes.
const dropInboxChunk = 500

// dropInbox deletes a session's record and every stored message, in chunks.
func (b *Broker) dropInbox(sid string) error {
	for {
		var slots []store.Slot
		if err := b.st.View(func(txn *store.Txn) error {
			slots = txn.InboxSlots(sid, dropInboxChunk)
			return nil
		}); err != nil {
			return err
		}
		last := len(slots) < dropInboxChunk
		var gone []store.Slot
		err := b.st.Update(func(txn *store.Txn) error {
			gone = gone[:0]
			for _, at := range slots {
				deleted, err := txn.DeleteMessageAt(at)
				if err != nil {
					return err
				}
				if deleted {
					gone = append(gone, at)
				}
			}
			if last {
				return txn.DeleteSession(sid)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("forget session %s: %w", sid, err)
		}
		b.ledger.removed(gone...)
		if last {
			b.ledger.dropSession(sid)
			return nil
		}
	}
}
