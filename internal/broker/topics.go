package broker

import (
	"encoding/json"
	"errors"
	"sort"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Topics: each sender has one current record per topic and each session
// one subscription per topic it follows, both in the store (store.TopicRecord,
// store.Subscription); wake-ups travel as ordinary inbox messages, written
// in the same transaction as the record.

// topicSession returns the session sid that holds topic state.
func (b *Broker) topicSession(sid, verb string) (session, error) {
	if _, _, remote := wire.SplitRemote(sid); remote {
		return session{Session: wire.Session{ID: sid}}, nil // a bridged host's session
	}
	s, ok := b.sessions.get(sid)
	if !ok {
		return session{}, wire.Errorf(wire.CodeNotFound, "%s: no session with id %q", verb, sid)
	}
	if s.Ephemeral {
		return session{}, wire.Errorf(wire.CodeBadRequest, "%s: an ephemeral session cannot hold topic state; pass --session", verb)
	}
	return s, nil
}

func (b *Broker) subscribeTopic(req wire.SubscribeRequest) (*wire.SubscribeReply, error) {
	if res, ok, err := b.forwardSubscription("subscribe", req); ok {
		return res, err
	}
	if err := wire.ValidateSubscribe(req); err != nil {
		return nil, err
	}
	if _, err := b.topicSession(req.SessionID, "subscribe"); err != nil {
		return nil, err
	}
	out := &wire.SubscribeReply{Topic: req.Topic, AwaitRelease: req.AwaitRelease}
	err := b.cmt.Wait(func(txn *store.Txn) error {
		out.Existed, _ = txn.Subscribed(req.Topic, req.SessionID)
		return txn.PutSubscription(store.Subscription{Topic: req.Topic, SessionID: req.SessionID, AwaitRelease: req.AwaitRelease, Since: time.Now().UTC()})
	})
	if err != nil {
		return nil, classify(err)
	}
	return out, nil
}

func (b *Broker) unsubscribeTopic(req wire.SubscribeRequest) (*wire.SubscribeReply, error) {
	if res, ok, err := b.forwardSubscription("unsubscribe", req); ok {
		return res, err
	}
	if err := wire.ValidateSubscribe(req); err != nil {
		return nil, err
	}
	out := &wire.SubscribeReply{Topic: req.Topic}
	err := b.cmt.Wait(func(txn *store.Txn) error {
		if subscribed, err := txn.Subscribed(req.Topic, req.SessionID); !subscribed && err == nil {
			return store.Refuse(wire.Errorf(wire.CodeNotFound, "not subscribed to %q", req.Topic))
		}
		out.Existed = true
		return txn.DeleteSubscription(req.Topic, req.SessionID)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// onPublish stores a record and, for blocker/decision/release, a steer
// message in each woken subscriber's inbox, in one transaction.
func (b *Broker) onPublish(m *nats.Msg) {
	fail := func(err error) { respond(m, wire.Reply[wire.PublishReply]{Error: toWireError(err)}) }
	var req wire.PublishRequest
	if err := json.Unmarshal(m.Data, &req); err != nil {
		fail(wire.Errorf(wire.CodeBadRequest, "decode publish request: %v", err))
		return
	}
	from, err := b.topicSession(req.From, "publish")
	if err != nil {
		fail(err)
		return
	}
	peer := from.peer()
	if topic, host, ok := wire.SplitRemote(req.Topic); ok {
		fwd := req
		fwd.Topic = topic
		res, err := b.forwardTopic(host, wire.BridgeTopic{Op: "publish", From: peer, Publish: &fwd})
		if err != nil {
			fail(err)
			return
		}
		res.Publish.Topic = req.Topic
		respond(m, wire.Reply[wire.PublishReply]{Result: res.Publish})
		return
	}
	res, err := b.publishAs(req, peer)
	if err != nil {
		fail(err)
		return
	}
	respond(m, wire.Reply[wire.PublishReply]{Result: res})
}

// publishAs stores peer's publication and its wake-ups and waits for the
// commit. Wake-ups for subscribers on bridged hosts go to their outbox.
func (b *Broker) publishAs(req wire.PublishRequest, peer wire.Peer) (*wire.PublishReply, error) {
	if err := wire.ValidatePublish(&req); err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	if req.Version == 0 {
		req.Version = now.UnixNano()
	}
	seq, err := b.seq.Next()
	if err != nil {
		return nil, err
	}
	rec := store.TopicRecord{Topic: req.Topic, From: peer, Event: req.Event, Message: req.Message,
		Resource: req.Resource, Ownership: req.Ownership, Seq: seq, Version: req.Version, PublishedAt: now}
	reply := &wire.PublishReply{Topic: req.Topic, Seq: seq}
	var wake []wire.Message
	remoteHosts := map[string]bool{}
	err = b.cmt.Wait(func(txn *store.Txn) error {
		wake, reply.Stale, reply.Woken, reply.Duplicate = nil, false, 0, false
		clear(remoteHosts)
		if req.ClientMsgID != "" { // applied before (a retry after a lost reply)?
			if prev, err := txn.PublishedSeq(peer.ID, req.ClientMsgID); err == nil || errors.Is(err, store.ErrUnreadable) {
				reply.Duplicate = true
				if err == nil {
					reply.Seq = prev
				}
				return nil
			} else if err != store.ErrNotFound {
				return err
			}
			if err := txn.PutPublished(peer.ID, req.ClientMsgID, seq, b.retryMemory()); err != nil {
				return err
			}
		}
		if err := b.checkOwnership(txn, req, peer); err != nil {
			return err
		}
		if old, ok, err := txn.TopicRecord(req.Topic, peer.ID); err != nil {
			return err
		} else if ok && old.Version > req.Version {
			reply.Stale, reply.Seq = true, old.Seq
			return nil
		}
		if err := txn.PutTopicRecord(peer.ID, rec); err != nil {
			return err
		}
		b.stageRecordHistory(rec)
		if req.Event == wire.EventUpdate {
			return nil
		}
		var subs []store.Subscription
		if err := txn.ScanSubscriptions(req.Topic, func(s store.Subscription) { subs = append(subs, s) }); err != nil {
			return err
		}
		for _, s := range subs {
			if s.SessionID == peer.ID || (req.Event == wire.EventRelease && !s.AwaitRelease) {
				continue
			}
			mseq, err := b.seq.Next()
			if err != nil {
				return err
			}
			msg := wire.Message{
				ID: newMsgID(), Seq: mseq, From: peer, To: s.SessionID, Text: req.Message,
				Delivery: wire.DeliverySteer, SentAt: now,
				Topic: req.Topic, Event: req.Event, Resource: req.Resource, Ownership: req.Ownership,
			}
			if _, host, remote := wire.SplitRemote(s.SessionID); remote {
				remoteHosts[host] = true
			}
			if err := txn.PutMessage(wakeSlot(msg), &msg); err != nil {
				return err
			}
			wake = append(wake, msg)
		}
		reply.Woken = len(wake)
		return nil
	})
	if err != nil {
		return nil, classify(err)
	}
	b.sessions.touch(peer.ID, now)
	for _, msg := range wake {
		b.ledger.stored(wakeSlot(msg), &msg)
		if _, _, remote := wire.SplitRemote(msg.To); !remote {
			b.deliv.push(msg.To, msg)
		}
	}
	for _, msg := range wake {
		if _, host, remote := wire.SplitRemote(msg.To); remote {
			b.announceOutbox(host, msg)
		}
	}
	return reply, nil
}

// forwardSubscription sends a subscription to "topic@host" over the bridge.
func (b *Broker) forwardSubscription(op string, req wire.SubscribeRequest) (*wire.SubscribeReply, bool, error) {
	topic, host, ok := wire.SplitRemote(req.Topic)
	if !ok {
		return nil, false, nil
	}
	from, err := b.topicSession(req.SessionID, op)
	if err != nil {
		return nil, true, err
	}
	peer := from.peer()
	fwd := req
	fwd.Topic = topic
	res, err := b.forwardTopic(host, wire.BridgeTopic{Op: op, From: peer, Subscribe: &fwd})
	if err != nil {
		return nil, true, err
	}
	res.Subscribe.Topic = req.Topic
	return res.Subscribe, true, nil
}

// topicsAnywhere reads local topics, or forwards "topic@host".
func (b *Broker) topicsAnywhere(req wire.TopicsRequest) (*wire.TopicsReply, error) {
	topic, host, ok := wire.SplitRemote(req.Topic)
	if !ok {
		return b.topicsPage(req, topicsPageBytes)
	}
	res, err := b.forwardTopic(host, wire.BridgeTopic{Op: "topics", Topic: topic, Offset: req.Offset})
	if err != nil {
		return nil, err
	}
	for i := range res.Topics {
		res.Topics[i].Topic += "@" + host
	}
	return &wire.TopicsReply{Topics: res.Topics, NextOffset: res.NextOffset}, nil
}

// topics reads current records, subscribers and resource owners.
func (b *Broker) topics(req wire.TopicsRequest) (*wire.TopicsReply, error) {
	out, _, err := b.topicsRead(req)
	return out, err
}

// topicsRead is topics, and how many records and subscriptions it read.
func (b *Broker) topicsRead(req wire.TopicsRequest) (*wire.TopicsReply, int, error) {
	if err := wire.ValidateTopics(req); err != nil {
		return nil, 0, err
	}
	var recs []store.TopicRecord
	var subs []store.Subscription
	err := b.st.View(func(txn *store.Txn) error {
		if err := txn.ScanTopicRecords(req.Topic, func(_ string, r store.TopicRecord) { recs = append(recs, r) }); err != nil {
			return err
		}
		return txn.ScanSubscriptions(req.Topic, func(s store.Subscription) { subs = append(subs, s) })
	})
	if err != nil {
		return nil, 0, err
	}
	byTopic := map[string]*wire.TopicInfo{}
	get := func(t string) *wire.TopicInfo {
		if ti := byTopic[t]; ti != nil {
			return ti
		}
		ti := &wire.TopicInfo{Topic: t, Records: []wire.TopicRecord{}, Subscribers: []wire.TopicSubscriber{}, Resources: []wire.ResourceState{}}
		byTopic[t] = ti
		return ti
	}
	for _, r := range recs {
		name, connected, local := b.sessions.nameOf(r.From.ID)
		if local {
			r.From.Name = name
		} else {
			connected = b.routes.connected(r.From.ID)
		}
		own := r.Ownership
		if own == wire.OwnershipHeld && !connected {
			own = wire.OwnershipUnavailable
		}
		ti := get(r.Topic)
		ti.Records = append(ti.Records, wire.TopicRecord{Topic: r.Topic, From: r.From, Event: r.Event, Message: r.Message,
			Resource: r.Resource, Ownership: own, Declared: r.Ownership, SenderConnected: connected,
			Seq: r.Seq, Version: r.Version, PublishedAt: r.PublishedAt})
	}
	for _, sub := range subs {
		name, connected, local := b.sessions.nameOf(sub.SessionID)
		if _, _, remote := wire.SplitRemote(sub.SessionID); !local && remote {
			name, connected = b.routes.nameOf(sub.SessionID)
		}
		ti := get(sub.Topic)
		ti.Subscribers = append(ti.Subscribers, wire.TopicSubscriber{SessionID: sub.SessionID, Name: name, AwaitRelease: sub.AwaitRelease, Connected: connected})
	}
	out := &wire.TopicsReply{Topics: []wire.TopicInfo{}}
	for _, ti := range byTopic {
		sort.Slice(ti.Records, func(i, j int) bool { return ti.Records[i].Seq > ti.Records[j].Seq })
		latest := map[string]wire.TopicRecord{}
		for _, r := range ti.Records { // newest first
			if r.Resource == "" {
				continue
			}
			if _, seen := latest[r.Resource]; !seen {
				latest[r.Resource] = r
			}
		}
		for res, r := range latest {
			st := wire.ResourceState{Resource: res, State: r.Ownership, Message: r.Message}
			if r.Ownership != wire.OwnershipReleased {
				from := r.From
				st.Holder = &from
			}
			ti.Resources = append(ti.Resources, st)
		}
		sort.Slice(ti.Resources, func(i, j int) bool { return ti.Resources[i].Resource < ti.Resources[j].Resource })
		sort.Slice(ti.Subscribers, func(i, j int) bool { return ti.Subscribers[i].Name < ti.Subscribers[j].Name })
		out.Topics = append(out.Topics, *ti)
	}
	sort.Slice(out.Topics, func(i, j int) bool { return out.Topics[i].Topic < out.Topics[j].Topic })
	return out, len(recs) + len(subs), nil
}

// dropSubscriptions removes every subscription of a forgotten session.
func (b *Broker) dropSubscriptions(sid string) error {
	return b.cmt.Wait(func(txn *store.Txn) error { return txn.DeleteSubscriptionsOf(sid) })
}
