package broker

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/internal/presence"
	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Sends to sessions of bridged hosts: stored in the host's outbox, taken by
// the bridge (bridge.outbox) and settled by it (bridge.ack).

// prepareRemoteSendLocked prepares a send whose target is name@host.
func (b *Broker) prepareRemoteSendLocked(req wire.SendRequest, from *session, name, host string, seq uint64) (*preparedSend, error) {
	p := &preparedSend{req: req}
	if req.ClientMsgID != "" {
		p.dkey = store.DedupeKey(from.ID, req.ClientMsgID)
		p.retry = b.dedupe[p.dkey] != "" // answered once the first is committed (applySend)
	}
	p.msg = wire.Message{ID: messageID(from.ID+"@"+host, req.ClientMsgID), Seq: seq, Text: req.Text, Delivery: req.Delivery, ExpectsReply: req.ExpectsReply,
		ReplyTo: req.ReplyTo, Thread: req.Thread, QueueMode: req.QueueMode, Attachments: req.Attachments, SentAt: time.Now().UTC()}
	if err := b.prepareRemoteLocked(p, from, name, host); err != nil {
		return nil, err
	}
	if n := linkSize(host, p.msg); n > wire.MaxLinkPayload {
		return nil, wire.Errorf(wire.CodeTooLarge, "message too large for the bridge link (%d bytes encoded, max %d): text that JSON escapes (quotes, backslashes, newlines) counts twice", n, wire.MaxLinkPayload)
	}
	if p.dkey != "" && !p.retry {
		b.dedupe[p.dkey] = p.msg.ID
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

// prepareRemoteLocked prepares a send to name@host: the message goes to the
// outbox of host.
func (b *Broker) prepareRemoteLocked(p *preparedSend, from *session, name, host string) error {
	req := p.req
	r := b.remotes[host]
	if r == nil || !wire.ValidHost(host) {
		return wire.Errorf(wire.CodeNotFound, "unknown host %q: no intercom-bridge has linked it", host)
	}
	if strings.Contains(name, "@") {
		return wire.Errorf(wire.CodeBadRequest, "target %q: only one @host is allowed", req.To)
	}
	toID := name + "@" + host
	p.toRow = wire.Session{ID: toID, Name: toID, Target: toID, Host: host, State: wire.StateDisconnected}
	rows := make([]*wire.Session, len(r.sessions))
	for i := range r.sessions {
		c := r.sessions[i]
		rows[i] = &c
	}
	if s, err := presence.Resolve(rows, name, ""); err == nil {
		toID = s.ID + "@" + host
		p.toRow = *s
		p.toRow.ID, p.toRow.Name, p.toRow.Target, p.toRow.Host = toID, s.Name+"@"+host, s.Target+"@"+host, host
		if !r.up() {
			p.toRow.Connected, p.toRow.State = false, wire.StateDisconnected
		}
	} else if r.up() {
		return wire.Errorf(wire.CodeNotFound, "no session matches %q on %s", name, host)
	}
	if req.ExpectsReply && req.WaitSubject != "" {
		if err := b.checkAskerLocked(req.From); err != nil {
			return err
		}
		if !p.toRow.Connected {
			return wire.Errorf(wire.CodePeerOffline, "%s is offline (or the bridge link is down); use `intercom send` to leave it a message", p.toRow.Target)
		}
		if !p.toRow.AcceptsAsks && !req.DeliverySet {
			p.peerBusy = true
		}
	}
	p.remote = host
	p.ask = req.ExpectsReply
	p.msg.From = wire.Peer{ID: from.ID, Name: from.Name, Cwd: from.Cwd}
	p.msg.To = toID
	p.key = store.OutboxKey(host, p.msg.Seq)
	return nil
}

// checkAskerLocked refuses a second waiting ask from one session.
func (b *Broker) checkAskerLocked(from string) error {
	for _, a := range b.asks {
		if a.from == from && a.waiter != "" {
			return wire.Errorf(wire.CodeAskBusy, "Already waiting for a reply (ask %s to %s)", a.id, a.to)
		}
	}
	return nil
}

// afterRemoteSend announces the outbox message to the bridge and answers the
// sender once the remote broker stored it, or reports it queued.
func (b *Broker) afterRemoteSend(m *nats.Msg, p *preparedSend, err error) {
	b.mu.Lock()
	if p.dkey != "" && !p.retry {
		delete(b.dedupe, p.dkey)
	}
	if err != nil || p.duplicate != "" {
		b.mu.Unlock()
		if err != nil {
			respond(m, wire.Reply[wire.SendReply]{Error: toWireError(err)})
		} else {
			respond(m, wire.Reply[wire.SendReply]{Result: &wire.SendReply{ID: p.duplicate, To: p.toRow, Duplicate: true}})
		}
		return
	}
	b.led.stored(p.key, &p.msg)
	now := time.Now().UTC()
	if from := b.sessions[p.msg.From.ID]; from != nil {
		from.LastIntercomActivity = &now
	}
	if p.ask {
		b.addAskLocked(p)
	}
	// A reply to an ask that came over the link settles the obligation
	// here, as a local reply does (the asker's broker wakes the asker).
	if a := b.asks[p.msg.ReplyTo]; a != nil && a.from == p.msg.To && a.to == p.msg.From.ID {
		b.retireAskLocked(a)
	}
	var wait chan wire.BridgeAck
	if r := b.remotes[p.remote]; r != nil && r.up() {
		wait = make(chan wire.BridgeAck, 1)
		b.remoteWait[p.msg.ID] = wait
	}
	b.mu.Unlock()
	b.publish(wire.BridgeOut(p.remote), p.msg)
	reply := wire.SendReply{ID: p.msg.ID, To: p.toRow, PeerBusy: p.peerBusy, Queued: true, Offline: true}
	if wait == nil {
		respond(m, wire.Reply[wire.SendReply]{Result: &reply})
		return
	}
	go func() {
		t := time.NewTimer(remoteWaitFor)
		defer t.Stop()
		select {
		case ack := <-wait:
			if ack.Error != nil {
				respond(m, wire.Reply[wire.SendReply]{Error: ack.Error})
				return
			}
			reply.Queued, reply.RemoteStored = false, true
			if ack.Result != nil {
				reply.Offline, reply.Duplicate = ack.Result.Offline, ack.Result.Duplicate
				reply.PeerBusy = reply.PeerBusy || ack.Result.PeerBusy
			}
		case <-t.C:
		}
		b.mu.Lock()
		delete(b.remoteWait, p.msg.ID)
		b.mu.Unlock()
		respond(m, wire.Reply[wire.SendReply]{Result: &reply})
	}()
}

func (b *Broker) bridgeOutbox(req wire.BridgeOutboxRequest) (*wire.InboxReply, error) {
	if !wire.ValidHost(req.Host) {
		return nil, wire.Errorf(wire.CodeBadRequest, "invalid host %q", req.Host)
	}
	limit := req.Limit
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	out := []wire.Message{}
	err := b.st.View(func(txn *store.Txn) error {
		return txn.Scan(store.OutboxPrefix(req.Host), func(_ string, v []byte) (bool, error) {
			var m wire.Message
			if json.Unmarshal(v, &m) == nil {
				out = append(out, m)
			}
			return len(out) < limit, nil
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
	if err := json.Unmarshal(m.Data, &req); err != nil || !wire.ValidHost(req.Host) || req.ID == "" {
		respond(m, wire.Reply[wire.BridgeAckReply]{Error: wire.Errorf(wire.CodeBadRequest, "bad bridge ack")})
		return
	}
	if req.Transient {
		b.mu.Lock()
		_, waiting := b.remoteWait[req.ID]
		b.mu.Unlock()
		if !waiting {
			respond(m, wire.Reply[wire.BridgeAckReply]{Result: &wire.BridgeAckReply{Kept: true}})
			return
		}
	}
	var settled *wire.Message
	var settledKey string
	b.cmt.Submit(store.Op{
		Apply: func(txn *store.Txn) error {
			settled, settledKey = nil, ""
			key, err := txn.Get(store.MessageIndexKey(req.ID))
			if err == store.ErrNotFound {
				return nil
			}
			if err != nil {
				return err
			}
			if !strings.HasPrefix(string(key), store.OutboxPrefix(req.Host)) {
				return nil
			}
			v, err := txn.Get(string(key))
			if err != nil {
				return err
			}
			var msg wire.Message
			if json.Unmarshal(v, &msg) == nil {
				settled = &msg
			}
			if err := txn.Delete(string(key)); err != nil {
				return err
			}
			settledKey = string(key)
			return txn.Delete(store.MessageIndexKey(req.ID))
		},
		After: func(err error) {
			if err != nil {
				respond(m, wire.Reply[wire.BridgeAckReply]{Error: toWireError(err)})
				return
			}
			b.mu.Lock()
			if settledKey != "" {
				b.led.removed(settledKey)
			}
			wait := b.remoteWait[req.ID]
			delete(b.remoteWait, req.ID)
			if req.Error != nil && settled != nil {
				if a := b.asks[settled.ID]; a != nil {
					if a.waiter != "" {
						b.publish(a.waiter, wire.AskEvent{AskID: a.id, Reason: "undeliverable", Error: req.Error.Message})
					}
					b.retireAskLocked(a)
				}
			}
			b.mu.Unlock()
			if wait != nil {
				wait <- req
			} else if req.Error != nil && settled != nil {
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
	key := store.InboxKey(msg.From.ID, seq)
	b.cmt.Submit(store.Op{
		Apply: func(txn *store.Txn) error {
			data, _ := json.Marshal(n)
			if err := txn.Set(key, data); err != nil {
				return err
			}
			return txn.Set(store.MessageIndexKey(n.ID), []byte(key))
		},
		After: func(err error) {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.led.stored(key, &n)
			if s := b.sessions[n.To]; s != nil {
				b.pushLocked(s, []wire.Message{n})
			}
			b.mu.Unlock()
		},
	})
}
