package broker

import (
	json "github.com/goccy/go-json"
	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Acknowledgements: a holder (or a fetching harness) confirms that messages
// reached its agent; they leave the store, their timeline is kept.

// onAck removes delivered messages durably.
func (b *Broker) onAck(m *nats.Msg) {
	var req wire.AckRequest
	if err := json.Unmarshal(m.Data, &req); err != nil {
		respond(m, wire.Reply[wire.AckReply]{Error: wire.Errorf(wire.CodeBadRequest, "decode ack request: %v", err)})
		return
	}
	if err := wire.ValidateAck(req); err != nil {
		respond(m, wire.Reply[wire.AckReply]{Error: toWireError(err)})
		return
	}
	acked := 0
	var ackedIDs []string
	var ackedSlots []store.Slot
	var kept [][]byte // history copies, staged once committed
	b.cmt.Submit(store.Op{
		Apply: func(txn *store.Txn) error {
			acked, ackedIDs, ackedSlots, kept = 0, ackedIDs[:0], ackedSlots[:0], kept[:0]
			for _, id := range req.IDs {
				at, stored := txn.MessageSlot(id)
				if !stored {
					// Not stored (any more, or yet: a message pushed early by a
					// broker that died before committing it). Remember the ack,
					// so that a retried send of it (same id) is not stored and
					// shown again after the holder was told it is acked.
					if err := txn.PutAcked(req.SessionID, id, b.retryMemory()); err != nil {
						return err
					}
					if err := b.keepUnstoredTrace(txn, req.SessionID, id); err != nil {
						return err
					}
					continue
				}
				if !at.InInbox(req.SessionID) {
					continue // not this session's message
				}
				if err := b.keepTrace(txn, id, at); err != nil {
					return err
				}
				kept = append(kept, b.historyCopy(txn, at))
				if err := txn.DeleteMessage(id, at); err != nil {
					return err
				}
				acked++
				ackedIDs = append(ackedIDs, id)
				ackedSlots = append(ackedSlots, at)
			}
			return nil
		},
		After: func(err error) {
			if err != nil {
				respond(m, wire.Reply[wire.AckReply]{Error: toWireError(err)})
				return
			}
			b.ledger.removed(ackedSlots...)
			b.keepHistory(kept...)
			// Taking delivery.mu before answering keeps pushEarly's promise:
			// a push checked before this ack was committed reaches the
			// holder before this answer.
			b.deliv.acked(req.SessionID, ackedIDs)
			b.sends.delivered(ackedIDs)
			respond(m, wire.Reply[wire.AckReply]{Result: &wire.AckReply{Acked: acked}})
		},
		Linger: true, // shares the next send's fsync rather than delaying it
	})
}
