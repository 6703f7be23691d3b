package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Sends to sessions of bridged hosts: stored in the host's outbox, taken by
// the bridge (bridge.outbox) and settled by it (bridge.ack).

// prepareRemoteSend prepares a send whose target is name@host: the message
// goes to the outbox of host.
func (b *Broker) prepareRemoteSend(req wire.SendRequest, from session, name, host string, seq uint64) (*preparedSend, error) {
	p := &preparedSend{req: req}
	if req.ClientMsgID != "" {
		p.dkey = store.ClientID{Scope: from.ID, ID: req.ClientMsgID}
		p.retry = b.sends.committing(p.dkey) // answered once the first is committed (applySend)
	}
	p.msg = wire.Message{ID: messageID(from.ID+"@"+host, req.ClientMsgID), Seq: seq, Text: req.Text, Delivery: req.Delivery, ExpectsReply: req.ExpectsReply,
		ReplyTo: req.ReplyTo, Thread: req.Thread, QueueMode: req.QueueMode, Attachments: req.Attachments, SentAt: time.Now().UTC()}
	to, err := b.routes.resolve(name, host)
	if err != nil {
		return nil, err
	}
	p.toRow = to.row
	if req.ExpectsReply && req.WaitSubject != "" {
		if err := b.asks.busy(req.From); err != nil {
			return nil, err
		}
		if p.toRow.State == wire.StateUnreachable {
			return nil, wire.Errorf(wire.CodePeerOffline, "%s is unreachable (the link to %s is down); use `intercom send` to leave it a message", p.toRow.Target, host)
		}
		if !p.toRow.Connected {
			return nil, wire.Errorf(wire.CodePeerOffline, "%s is offline (or the bridge link is down); use `intercom send` to leave it a message", p.toRow.Target)
		}
		if !p.toRow.AcceptsAsks && !req.DeliverySet {
			p.peerBusy = true
		}
	}
	p.remote = host
	p.ask = req.ExpectsReply
	p.msg.From = from.peer()
	p.msg.To = p.toRow.ID
	p.slot = store.OutboxSlot(host, p.msg.Seq)
	if n := linkSize(host, p.msg); n > wire.MaxLinkPayload {
		return nil, wire.Errorf(wire.CodeTooLarge, "message too large for the bridge link (%d bytes encoded, max %d): text that JSON escapes (quotes, backslashes, newlines) counts twice", n, wire.MaxLinkPayload)
	}
	if !p.dkey.IsZero() && !p.retry {
		b.sends.begin(p.dkey, p.msg.ID)
	}
	return p, nil
}

// linkSize is the size of msg as the bridge forwards it to host.
func linkSize(host string, msg wire.Message) int {
	data, err := wire.LinkJSON(wire.BridgeDeliver{Host: host, Message: msg, Limits: &wire.BridgeLimits{}})
	if err != nil {
		return wire.MaxLinkPayload + 1
	}
	return len(data) + 512 // the NATS envelope and a few more limit fields
}

// afterRemoteSend answers the sender once the remote broker stored its
// message (announced to the bridge while it was persisted, or now:
// announceEarly), or reports it queued.
func (b *Broker) afterRemoteSend(m *nats.Msg, p *preparedSend, err error) {
	b.committedRemote(p)
	if !p.dkey.IsZero() && !p.retry {
		b.sends.end(p.dkey)
	}
	if err != nil || p.duplicate != "" {
		if p.announced {
			// Announced, then not stored by this op: the bridge may have
			// forwarded it (the remote broker knows its id), but this
			// sender hears of it from here.
			b.routes.forget(p.msg.ID)
		}
		if err != nil {
			respond(m, wire.Reply[wire.SendReply]{Error: toWireError(err)})
		} else {
			respond(m, wire.Reply[wire.SendReply]{Result: &wire.SendReply{ID: p.duplicate, To: p.toRow, Duplicate: true}})
		}
		return
	}
	b.ledger.stored(p.slot, &p.msg)
	now := time.Now().UTC()
	b.sessions.touch(p.msg.From.ID, now)
	if p.ask {
		b.asks.add(newAsk(p), askTimeout(p.req.TimeoutMs))
	}
	// A reply to an ask that came over the link settles the obligation
	// here, as a local reply does (the asker's broker wakes the asker).
	b.asks.settle(p.msg.ReplyTo, p.msg.From.ID, p.msg.To, nil)
	wait := p.wait
	if !p.announced {
		wait = b.routes.expect(p.remote, p.msg.ID)
		b.announceOutbox(p.remote, p.msg)
	}
	reply := wire.SendReply{ID: p.msg.ID, To: p.toRow, PeerBusy: p.peerBusy, Queued: true, Offline: true}
	if wait == nil || !b.tasks.Go(func() { b.awaitRemote(m, p.msg.ID, wait, reply) }) {
		b.routes.forget(p.msg.ID)
		respond(m, wire.Reply[wire.SendReply]{Result: &reply})
	}
}

// awaitRemote answers a sender once the remote broker stored its message,
// or reports it queued after remoteWaitFor (or when the broker stops). A
// transient refusal being committed when the time runs out is waited for:
// it deletes the message, so the sender must hear of it.
func (b *Broker) awaitRemote(m *nats.Msg, id string, wait chan remoteOutcome, reply wire.SendReply) {
	t := time.NewTimer(remoteWaitFor)
	defer t.Stop()
	var o remoteOutcome
	select {
	case o = <-wait:
	case <-t.C:
		if b.routes.timedOut(id) {
			o.queued = true
			break
		}
		select {
		case o = <-wait:
		case <-b.tasks.Done():
			o.queued = true
		}
	case <-b.tasks.Done():
		b.routes.forget(id)
		o.queued = true
	}
	switch {
	case o.queued:
	case o.ack.Error != nil:
		respond(m, wire.Reply[wire.SendReply]{Error: o.ack.Error})
		return
	default:
		reply.Queued, reply.RemoteStored = false, true
		if r := o.ack.Result; r != nil {
			reply.Offline, reply.Duplicate = r.Offline, r.Duplicate
			reply.PeerBusy = reply.PeerBusy || r.PeerBusy
		}
	}
	respond(m, wire.Reply[wire.SendReply]{Result: &reply})
}

func (b *Broker) bridgeOutbox(req wire.BridgeOutboxRequest) (*wire.InboxReply, error) {
	if !wire.ValidHost(req.Host) {
		return nil, wire.Errorf(wire.CodeBadRequest, "invalid host %q", req.Host)
	}
	limit := req.Limit
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	if b.announcing() {
		// An announced message may not be committed yet: the read must
		// return it (announceEarly).
		if err := b.cmt.Wait(func(*store.Txn) error { return nil }); err != nil {
			return nil, err
		}
	}
	out := []wire.Message{}
	err := b.st.View(func(txn *store.Txn) error {
		return txn.ScanOutbox(req.Host, func(_ store.Slot, m wire.Message) bool {
			out = append(out, m)
			return len(out) < limit
		})
	})
	if err != nil {
		return nil, err
	}
	return &wire.InboxReply{Messages: out}, nil
}

// onBridgeAck removes a forwarded (or refused) outbox message durably. A
// transient refusal (a quota of the remote side) removes it only when its
// sender is waiting for the answer, who then gets the refusal; otherwise
// the message stays queued and the bridge retries later.
func (b *Broker) onBridgeAck(m *nats.Msg) {
	var req wire.BridgeAck
	if err := json.Unmarshal(m.Data, &req); err != nil {
		respond(m, wire.Reply[wire.BridgeAckReply]{Error: wire.Errorf(wire.CodeBadRequest, "bad bridge ack")})
		return
	}
	b.settleOutbox(m, req)
}

// settleOutbox is onBridgeAck of one decoded ack, answered on m.
func (b *Broker) settleOutbox(m *nats.Msg, req wire.BridgeAck) {
	if !wire.ValidHost(req.Host) || req.ID == "" {
		respond(m, wire.Reply[wire.BridgeAckReply]{Error: wire.Errorf(wire.CodeBadRequest, "bad bridge ack")})
		return
	}
	kept := &wire.BridgeAckReply{Kept: true}
	if req.Transient && !b.routes.expecting(req.ID) {
		respond(m, wire.Reply[wire.BridgeAckReply]{Result: kept})
		return
	}
	var settled *wire.Message
	var settledSlot store.Slot
	var history []byte // the history's copy of a message the remote broker stored
	// A transient refusal deletes the message only for a sender still
	// waiting, claimed here (in the commit, where the message is seen in
	// the outbox) so that its timeout cannot tell it "queued" meanwhile.
	claimed, unclaimed := false, false
	b.cmt.Submit(store.Op{
		Apply: func(txn *store.Txn) error {
			settled, settledSlot, history, unclaimed = nil, store.Slot{}, nil, false
			at, ok := txn.MessageSlot(req.ID)
			if !ok || !at.InOutbox(req.Host) {
				return nil
			}
			if req.Transient {
				if claimed = claimed || b.routes.claim(req.ID); !claimed {
					unclaimed = true // its sender stopped waiting: it stays queued
					return nil
				}
			}
			msg, err := txn.MessageAt(at)
			if err != nil && !errors.Is(err, store.ErrUnreadable) {
				return err
			}
			if err == nil {
				settled = &msg
			}
			if req.Error == nil {
				history = b.historyCopy(txn, at)
			}
			if err := txn.DeleteMessage(req.ID, at); err != nil {
				return err
			}
			settledSlot = at
			return nil
		},
		After: func(err error) {
			if claimed && (err != nil || settledSlot.IsZero()) {
				// Not deleted by this refusal: still queued, as its sender is
				// told (unless the ack that did delete it answered first).
				b.routes.answer(req.ID, remoteOutcome{queued: true})
			}
			switch {
			case err != nil:
				respond(m, wire.Reply[wire.BridgeAckReply]{Error: toWireError(err)})
				return
			case unclaimed:
				respond(m, wire.Reply[wire.BridgeAckReply]{Result: kept})
				return
			case settledSlot.IsZero(): // settled before (a retry's ack)
				if !req.Transient {
					b.routes.answer(req.ID, remoteOutcome{ack: req})
				}
				respond(m, wire.Reply[wire.BridgeAckReply]{Result: &wire.BridgeAckReply{}})
				return
			}
			b.ledger.removed(settledSlot)
			b.keepHistory(history)
			if req.Error != nil && settled != nil {
				b.asks.fail(settled.ID, "undeliverable", req.Error.Message)
			}
			told := b.routes.answer(req.ID, remoteOutcome{ack: req})
			if !told && req.Error != nil && settled != nil {
				b.noticeUndeliverable(req.Host, settled, req.Error)
			}
			respond(m, wire.Reply[wire.BridgeAckReply]{Result: &wire.BridgeAckReply{}})
		},
	})
}

// noticeSender is the sender id of the bridge's notices (noticeSender@host).
const noticeSender = "bridge"

// noticeUndeliverable tells the sender of a queued remote message that the
// remote side refused it.
func (b *Broker) noticeUndeliverable(host string, msg *wire.Message, why *wire.Error) {
	seq, err := b.seq.Next()
	if err != nil {
		return
	}
	n := wire.Message{ID: newMsgID(), Seq: seq, From: wire.Peer{ID: noticeSender + "@" + host, Name: "intercom-bridge@" + host},
		To: msg.From.ID, Delivery: wire.DeliverySteer, SentAt: time.Now().UTC(), ReplyTo: msg.ID,
		Text: fmt.Sprintf("Message %s to %s could not be delivered: %s", msg.ID, msg.To, why.Message)}
	at := store.InboxSlot(msg.From.ID, seq)
	b.cmt.Submit(store.Op{
		Apply: func(txn *store.Txn) error { return txn.PutMessage(at, &n) },
		After: func(err error) {
			if err != nil {
				return
			}
			b.ledger.stored(at, &n)
			b.deliv.push(n.To, n)
		},
	})
}
