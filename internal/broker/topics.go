package broker

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Topics: each sender has one current record per topic
// (store.TopicRecordKey) and each subscription is a key (store.TopicSubKey).
// Records and subscriptions live in the store; wake-ups travel as ordinary
// inbox messages, written in the same transaction as the record.

// storedRecord is a topic record on disk.
type storedRecord struct {
	Topic       string    `json:"topic"`
	From        wire.Peer `json:"from"`
	Event       string    `json:"event"`
	Message     string    `json:"message"`
	Resource    string    `json:"resource,omitempty"`
	Ownership   string    `json:"ownership,omitempty"`
	Seq         uint64    `json:"seq"`
	Version     int64     `json:"version"`
	PublishedAt time.Time `json:"published_at"`
}

type storedSub struct {
	Topic        string    `json:"topic"`
	SessionID    string    `json:"session_id"`
	AwaitRelease bool      `json:"await_release"`
	Since        time.Time `json:"since"`
}

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
		_, err := txn.Get(store.TopicSubKey(req.Topic, req.SessionID))
		out.Existed = err == nil
		data, _ := json.Marshal(storedSub{Topic: req.Topic, SessionID: req.SessionID, AwaitRelease: req.AwaitRelease, Since: time.Now().UTC()})
		return txn.Set(store.TopicSubKey(req.Topic, req.SessionID), data)
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
		_, err := txn.Get(store.TopicSubKey(req.Topic, req.SessionID))
		if err == store.ErrNotFound {
			return store.Refuse(wire.Errorf(wire.CodeNotFound, "not subscribed to %q", req.Topic))
		}
		out.Existed = true
		return txn.Delete(store.TopicSubKey(req.Topic, req.SessionID))
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
	rec := storedRecord{Topic: req.Topic, From: peer, Event: req.Event, Message: req.Message,
		Resource: req.Resource, Ownership: req.Ownership, Seq: seq, Version: req.Version, PublishedAt: now}
	reply := &wire.PublishReply{Topic: req.Topic, Seq: seq}
	var wake []wire.Message
	remoteHosts := map[string]bool{}
	pkey := ""
	if req.ClientMsgID != "" {
		pkey = store.PublishDedupeKey(peer.ID, req.ClientMsgID)
	}
	err = b.cmt.Wait(func(txn *store.Txn) error {
		wake, reply.Stale, reply.Woken, reply.Duplicate = nil, false, 0, false
		clear(remoteHosts)
		if pkey != "" { // applied before (a retry after a lost reply)?
			if v, err := txn.Get(pkey); err == nil {
				reply.Duplicate = true
				_, _ = fmt.Sscan(string(v), &reply.Seq)
				return nil
			} else if err != store.ErrNotFound {
				return err
			}
			if err := txn.SetTTL(pkey, []byte(fmt.Sprint(seq)), b.retryMemory()); err != nil {
				return err
			}
		}
		if err := b.checkOwnership(txn, req, peer); err != nil {
			return err
		}
		if v, err := txn.Get(store.TopicRecordKey(req.Topic, peer.ID)); err == nil {
			var old storedRecord
			if json.Unmarshal(v, &old) == nil && old.Version > req.Version {
				reply.Stale, reply.Seq = true, old.Seq
				return nil
			}
		} else if err != store.ErrNotFound {
			return err
		}
		data, _ := json.Marshal(rec)
		if err := txn.Set(store.TopicRecordKey(req.Topic, peer.ID), data); err != nil {
			return err
		}
		b.stageRecordHistory(data)
		if req.Event == wire.EventUpdate {
			return nil
		}
		var subs []storedSub
		if err := txn.Scan(store.TopicSubPrefix(req.Topic), func(_ string, v []byte) (bool, error) {
			var s storedSub
			if json.Unmarshal(v, &s) == nil {
				subs = append(subs, s)
			}
			return true, nil
		}); err != nil {
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
			key := store.InboxKey(s.SessionID, mseq)
			if _, host, remote := wire.SplitRemote(s.SessionID); remote {
				key = store.OutboxKey(host, mseq)
				remoteHosts[host] = true
			}
			data, _ := json.Marshal(msg)
			if err := txn.Set(key, data); err != nil {
				return err
			}
			txn.IndexMessage(msg.ID, key)
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
		b.ledger.stored(wakeKey(msg), &msg)
		if _, _, remote := wire.SplitRemote(msg.To); !remote {
			b.deliv.push(msg.To, msg)
		}
	}
	for _, msg := range wake {
		if _, host, remote := wire.SplitRemote(msg.To); remote {
			b.publish(wire.BridgeOut(host), msg)
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
	var recs []storedRecord
	var subs []storedSub
	recPrefix, subPrefix := store.TopicRecordPrefix(req.Topic), store.TopicSubPrefix(req.Topic)
	err := b.st.View(func(txn *store.Txn) error {
		if err := txn.Scan(recPrefix, func(_ string, v []byte) (bool, error) {
			var r storedRecord
			if json.Unmarshal(v, &r) == nil {
				recs = append(recs, r)
			}
			return true, nil
		}); err != nil {
			return err
		}
		return txn.Scan(subPrefix, func(_ string, v []byte) (bool, error) {
			var s storedSub
			if json.Unmarshal(v, &s) == nil {
				subs = append(subs, s)
			}
			return true, nil
		})
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
	return b.cmt.Wait(func(txn *store.Txn) error {
		var keys []string
		if err := txn.Scan(store.TopicSubsAll, func(k string, _ []byte) (bool, error) {
			if store.TopicKeyOf(k, sid) {
				keys = append(keys, k)
			}
			return true, nil
		}); err != nil {
			return err
		}
		for _, k := range keys {
			if err := txn.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}
