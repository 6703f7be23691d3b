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

// Bridged hosts. An intercom-bridge process reports a remote host's
// sessions; messages to "name@host" are stored durably in the local outbox
// (outbox/<host>/<seq>) and forwarded by the bridge, which settles each one
// with bridge.ack once the remote broker has stored it. Remote senders and
// sessions are known here by pseudo ids "<id>@<host>".

// remoteWaitFor is how long a send to a remote target waits for the remote
// broker's acceptance before it is reported as queued.
const remoteWaitFor = 5 * time.Second

// remoteStaleAfter: a bridge reports its host every second (every few
// seconds while the link hangs). A host not reported for this long is
// treated as down, as when the bridge process died without a word.
const remoteStaleAfter = 10 * time.Second

type remoteHost struct {
	host     string
	linkUp   bool
	sessions []wire.Session // as the remote broker reports them
	updated  time.Time
	stale    *time.Timer // fires when no report has come for remoteStaleAfter
}

// up reports whether the link to the host is up, per a recent report.
func (r *remoteHost) up() bool { return r.linkUp && time.Since(r.updated) < remoteStaleAfter }

func (b *Broker) loadRemotes() error {
	return b.st.View(func(txn *store.Txn) error {
		return txn.Scan(store.RemoteHostsPrefix, func(k string, _ []byte) (bool, error) {
			h := store.RemoteHostOf(k)
			b.remotes[h] = &remoteHost{host: h}
			return true, nil
		})
	})
}

// remoteRowsLocked returns the sessions of bridged hosts as name@host rows.
func (b *Broker) remoteRowsLocked() []wire.Session {
	var out []wire.Session
	for _, r := range b.remotes {
		for _, s := range r.sessions {
			row := s
			row.ID, row.Name, row.Host = s.ID+"@"+r.host, s.Name+"@"+r.host, r.host
			row.Target = s.Target + "@" + r.host
			row.Self, row.Project = false, ""
			if !r.up() {
				row.Connected, row.State, row.AcceptsAsks = false, wire.StateDisconnected, false
			}
			out = append(out, row)
		}
	}
	return out
}

// failRemoteAsksLocked fails the asks to sessions of host that are gone or
// whose link is down or stale, like asks to local sessions that left.
func (b *Broker) failRemoteAsksLocked(host string) {
	for _, a := range b.asks {
		if _, h, ok := wire.SplitRemote(a.to); ok && h == host && !b.remoteConnectedLocked(a.to) {
			if a.waiter != "" {
				b.publish(a.waiter, wire.AskEvent{AskID: a.id, Reason: "peer_disconnected"})
			}
			b.retireAskLocked(a)
		}
	}
}

// remoteConnectedLocked reports whether a pseudo id names a connected
// remote session over a live link.
func (b *Broker) remoteConnectedLocked(pseudo string) bool {
	id, host, ok := wire.SplitRemote(pseudo)
	r := b.remotes[host]
	if !ok || r == nil || !r.up() {
		return false
	}
	for _, s := range r.sessions {
		if s.ID == id {
			return s.Connected
		}
	}
	return false
}

func (b *Broker) bridgePresence(req wire.BridgePresence) (*wire.Empty, error) {
	if !wire.ValidHost(req.Host) {
		return nil, wire.Errorf(wire.CodeBadRequest, "invalid host %q", req.Host)
	}
	b.mu.Lock()
	r := b.remotes[req.Host]
	isNew := r == nil
	if isNew {
		r = &remoteHost{host: req.Host}
		b.remotes[req.Host] = r
	}
	r.linkUp, r.updated = req.LinkUp, time.Now()
	if req.LinkUp || req.Sessions != nil {
		r.sessions = req.Sessions
	}
	rows := make([]*wire.Session, len(r.sessions))
	for i := range r.sessions {
		rows[i] = &r.sessions[i]
	}
	presence.AssignTargets(rows)
	b.failRemoteAsksLocked(req.Host)
	// A bridge that dies silently sends no "link down": when reports stop,
	// the host goes stale and the asks waiting on it fail then.
	if r.stale != nil {
		r.stale.Stop()
	}
	host := req.Host
	r.stale = time.AfterFunc(remoteStaleAfter+100*time.Millisecond, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.failRemoteAsksLocked(host)
	})
	b.mu.Unlock()
	if isNew {
		if err := b.st.Update(func(txn *store.Txn) error { return txn.Set(store.RemoteHostKey(req.Host), nil) }); err != nil {
			return nil, err
		}
	}
	return &wire.Empty{}, nil
}

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
	if p.dkey != "" && !p.retry {
		b.dedupe[p.dkey] = p.msg.ID
	}
	return p, nil
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

// onBridgeAck removes a forwarded (or refused) outbox message durably.
func (b *Broker) onBridgeAck(m *nats.Msg) {
	var req wire.BridgeAck
	if err := json.Unmarshal(m.Data, &req); err != nil || !wire.ValidHost(req.Host) || req.ID == "" {
		respond(m, wire.Reply[wire.Empty]{Error: wire.Errorf(wire.CodeBadRequest, "bad bridge ack")})
		return
	}
	var settled *wire.Message
	b.cmt.Submit(store.Op{
		Apply: func(txn *store.Txn) error {
			settled = nil
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
			return txn.Delete(store.MessageIndexKey(req.ID))
		},
		After: func(err error) {
			if err != nil {
				respond(m, wire.Reply[wire.Empty]{Error: toWireError(err)})
				return
			}
			b.mu.Lock()
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
			respond(m, wire.Reply[wire.Empty]{Result: &wire.Empty{}})
		},
	})
}

// noticeUndeliverable tells the sender of a queued remote message that the
// remote side refused it.
func (b *Broker) noticeUndeliverable(host string, msg *wire.Message, why *wire.Error) {
	seq, err := b.seq.Next()
	if err != nil {
		return
	}
	n := wire.Message{ID: newMsgID(), Seq: seq, From: wire.Peer{ID: "bridge@" + host, Name: "intercom-bridge@" + host},
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
			if s := b.sessions[n.To]; s != nil {
				b.pushLocked(s, []wire.Message{n})
			}
			b.mu.Unlock()
		},
	})
}

// onBridgeDeliver stores a message that arrived from a bridged host into a
// local inbox, exactly once per remote message id.
func (b *Broker) onBridgeDeliver(m *nats.Msg) {
	fail := func(err error) { respond(m, wire.Reply[wire.SendReply]{Error: toWireError(err)}) }
	var req wire.BridgeDeliver
	if err := json.Unmarshal(m.Data, &req); err != nil {
		fail(wire.Errorf(wire.CodeBadRequest, "decode bridge delivery: %v", err))
		return
	}
	in := req.Message
	if !wire.ValidHost(req.Host) || in.ID == "" || in.From.ID == "" {
		fail(wire.Errorf(wire.CodeBadRequest, "bridge delivery: host, message id and sender are required"))
		return
	}
	sreq := wire.SendRequest{From: in.From.ID + "@" + req.Host, To: in.To, Text: in.Text, Delivery: in.Delivery,
		ExpectsReply: in.ExpectsReply, ReplyTo: in.ReplyTo, Thread: in.Thread, QueueMode: in.QueueMode,
		Attachments: in.Attachments, ClientMsgID: in.ID, DeliverySet: true}
	if err := wire.ValidateSend(&sreq); err != nil && in.Topic == "" {
		fail(err)
		return
	}
	seq, err := b.seq.Next()
	if err != nil {
		fail(err)
		return
	}
	b.mu.Lock()
	if _, ok := b.remotes[req.Host]; !ok {
		b.remotes[req.Host] = &remoteHost{host: req.Host}
	}
	to, err := b.lookupLocked(in.To, "")
	if err != nil {
		b.mu.Unlock()
		fail(err)
		return
	}
	p := &preparedSend{req: sreq, toRow: b.viewLocked(to, ""), ask: in.ExpectsReply}
	p.dkey = store.DedupeKey(sreq.From, in.ID)
	p.retry = b.dedupe[p.dkey] != "" // answered once the first is committed (applySend)
	p.msg = in
	p.msg.Seq, p.msg.To = seq, to.ID
	p.msg.From = wire.Peer{ID: sreq.From, Name: in.From.Name + "@" + req.Host, Cwd: in.From.Cwd}
	if p.msg.Topic != "" {
		p.msg.Topic += "@" + req.Host // a wake-up from a topic of that host
	}
	p.key = store.InboxKey(to.ID, seq)
	if !p.retry {
		b.dedupe[p.dkey] = in.ID
	}
	b.mu.Unlock()
	b.cmt.Submit(store.Op{
		Apply: func(txn *store.Txn) error { return b.applySend(txn, p) },
		After: func(err error) { b.afterSend(m, p, err) },
		Size:  len(m.Data),
	})
}

// forwardTopic runs a topic operation for "topic@host" on the bridged host.
func (b *Broker) forwardTopic(host string, req wire.BridgeTopic) (*wire.BridgeTopicReply, error) {
	b.mu.Lock()
	r := b.remotes[host]
	b.mu.Unlock()
	if r == nil {
		return nil, wire.Errorf(wire.CodeNotFound, "unknown host %q: no intercom-bridge has linked it", host)
	}
	data, _ := json.Marshal(req)
	msg, err := b.nc.Request(bridgeRPC(host), data, remoteWaitFor)
	if err != nil {
		return nil, wire.Errorf(wire.CodePeerOffline, "topic on %s: the bridge link is down (%v)", host, err)
	}
	var out wire.Reply[wire.BridgeTopicReply]
	if err := json.Unmarshal(msg.Data, &out); err != nil {
		return nil, fmt.Errorf("topic on %s: %w", host, err)
	}
	if out.Error != nil {
		return nil, out.Error
	}
	return out.Result, nil
}

func bridgeRPC(host string) string { return wire.SubjectPrefix + "bridge.rpc." + host }

// bridgeTopic runs a topic operation that a remote session asked for.
func (b *Broker) bridgeTopic(req wire.BridgeTopic) (*wire.BridgeTopicReply, error) {
	if !wire.ValidHost(req.Host) || (req.From.ID == "" && req.Op != "topics") {
		return nil, wire.Errorf(wire.CodeBadRequest, "bridge topic: host and sender are required")
	}
	peer := wire.Peer{ID: req.From.ID + "@" + req.Host, Name: req.From.Name + "@" + req.Host, Cwd: req.From.Cwd}
	switch req.Op {
	case "subscribe", "unsubscribe":
		if req.Subscribe == nil {
			return nil, wire.Errorf(wire.CodeBadRequest, "bridge topic: subscription missing")
		}
		s := *req.Subscribe
		s.SessionID = peer.ID
		var res *wire.SubscribeReply
		var err error
		if req.Op == "subscribe" {
			res, err = b.subscribeTopic(s)
		} else {
			res, err = b.unsubscribeTopic(s)
		}
		if err != nil {
			return nil, err
		}
		return &wire.BridgeTopicReply{Subscribe: res}, nil
	case "publish":
		if req.Publish == nil {
			return nil, wire.Errorf(wire.CodeBadRequest, "bridge topic: publication missing")
		}
		res, err := b.publishAs(*req.Publish, peer)
		if err != nil {
			return nil, err
		}
		return &wire.BridgeTopicReply{Publish: res}, nil
	case "topics":
		res, err := b.topics(wire.TopicsRequest{Topic: req.Topic})
		if err != nil {
			return nil, err
		}
		return &wire.BridgeTopicReply{Topics: res.Topics}, nil
	}
	return nil, wire.Errorf(wire.CodeBadRequest, "bridge topic: unknown op %q", req.Op)
}
