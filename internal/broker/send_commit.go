package broker

import (
	"time"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Committing a send: applySend runs inside the committer's batch; afterSend
// answers the sender once the batch is on disk and delivers the message.

func (b *Broker) applySend(txn *store.Txn, p *preparedSend) error {
	p.duplicate = ""
	if !p.dkey.IsZero() { // committed earlier with the same client message id?
		if id, err := txn.SentID(p.dkey); err == nil {
			p.duplicate = id
			return nil
		} else if err != store.ErrNotFound {
			return err
		}
	}
	if acked, err := txn.Acked(p.msg.To, p.msg.ID); err != nil {
		return err
	} else if acked {
		// Its holder acked this id before it was stored (an early push by a
		// broker that died before the commit): it was delivered.
		p.duplicate = p.msg.ID
		return nil
	}
	if _, ok := txn.MessageSlot(p.msg.ID); ok {
		// The same client message id, reused after its dedupe window while
		// the first message is still undelivered: it is that message.
		p.duplicate = p.msg.ID
		return nil
	}
	if err := txn.PutMessage(p.slot, &p.msg); err != nil {
		return err
	}
	if p.req.ClientMsgID != "" {
		if err := txn.PutSent(p.dkey, p.msg.ID, b.retryMemory()); err != nil {
			return err
		}
	}
	p.replacedGone = false
	if !p.took.slot.IsZero() {
		var err error
		if p.replacedGone, err = txn.DeleteMessageAt(p.took.slot); err != nil {
			return err
		}
	}
	return nil
}

// newAsk is the obligation a stored ask p makes.
func newAsk(p *preparedSend) *ask {
	a := &ask{
		id: p.msg.ID, from: p.msg.From.ID, to: p.msg.To,
		fromName: p.msg.From.Name, fromCwd: p.msg.From.Cwd, text: p.msg.Text, sentAt: p.msg.SentAt,
	}
	if !p.peerBusy {
		a.waiter = p.req.WaitSubject
	}
	return a
}

func (b *Broker) afterSend(m *nats.Msg, p *preparedSend, err error) {
	if p.req.ClientMsgID != "" && !p.retry {
		b.sends.end(p.dkey)
	}
	to := p.msg.To
	if err != nil || p.duplicate != "" {
		if !p.retry { // a retry's id is its first send's: leave that one's state
			b.deliv.unsent(to, p.msg.ID, p.took.id)
		}
		if p.rkey != (replaceKey{}) {
			b.sends.giveBack(p.rkey, p.took)
		}
		if err != nil {
			respond(m, wire.Reply[wire.SendReply]{Error: toWireError(err)})
		} else {
			b.respondSent(m, &p.req, wire.SendReply{ID: p.duplicate, To: p.toRow, Duplicate: true, Offline: !p.toRow.Connected})
		}
		return
	}
	b.ledger.stored(p.slot, &p.msg)
	if p.replacedGone {
		b.ledger.removed(p.took.slot)
	}
	var a *ask
	if p.ask {
		a = newAsk(p)
	}
	known, connected := b.sessions.stored(p.msg.From.ID, to, time.Now().UTC(), a, askTimeout(p.req.TimeoutMs))
	reply := wire.SendReply{ID: p.msg.ID, To: p.toRow, PeerBusy: p.peerBusy}
	if !known { // forgotten meanwhile
		b.respondSent(m, &p.req, reply)
		return
	}
	reply.Offline = !connected
	if !p.took.slot.IsZero() {
		b.deliv.replacedGone(to, p.took.id)
	}
	// A reply to a waiting ask goes to the waiter, not the holder.
	b.asks.settle(p.msg.ReplyTo, p.msg.From.ID, to, func(waiter string) {
		if waiter != "" {
			b.deliv.claim(to, p.msg.ID)
			msg := p.msg
			b.publish(waiter, wire.AskEvent{AskID: p.msg.ReplyTo, Reply: &msg})
		}
	})
	if held, ok := b.deliv.heldUntil(to, p.msg.ID); ok {
		b.deliv.flushAfter(to, time.Until(held)+time.Millisecond)
	}
	b.deliv.push(to, p.msg)
	reply.WakeHeld = b.deliv.wakeHeld(to, p.msg.ID) // the sender is told (wake.go)
	b.respondSent(m, &p.req, reply)
}
