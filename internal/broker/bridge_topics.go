package broker

import (
	"encoding/json"
	"strings"

	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Topics across hosts. A local session reaches a topic of a bridged host as
// "topic@host" (forwardTopic); a remote session reaches only the topics
// this host exports to its host (bridgeTopic): names starting with one of
// the exported prefixes, never a name with '@' (no pivot to a third host).
// Ownership follows its holder there as here (ownership.go).

// forwardTopic runs a topic operation for "topic@host" on the bridged host.
func (b *Broker) forwardTopic(host string, req wire.BridgeTopic) (*wire.BridgeTopicReply, error) {
	if !b.routes.known(host) {
		return nil, wire.Errorf(wire.CodeNotFound, "unknown host %q: no intercom-bridge has linked it", host)
	}
	data, _ := json.Marshal(req)
	msg, err := b.nc.Request(wire.BridgeRPC(host), data, remoteWaitFor)
	if err != nil {
		return nil, wire.Errorf(wire.CodePeerOffline, "topic on %s: the bridge link is down (%v)", host, err)
	}
	var out wire.Reply[wire.BridgeTopicReply]
	if err := json.Unmarshal(msg.Data, &out); err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "topic on %s: unreadable reply: %v", host, err)
	}
	if out.Error != nil {
		return nil, out.Error
	}
	if out.Result == nil {
		return nil, wire.Errorf(wire.CodeInternal, "topic on %s: empty reply", host)
	}
	if err := out.Result.CheckReply(req.Op); err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "topic on %s: malformed reply: %v", host, err)
	}
	return out.Result, nil
}

// exported reports whether topic is exported by one of the prefixes: a
// prefix exports the topic of that name and every topic below it
// ("deploy" exports deploy, deploy/api and deploy:x, not deployment); a
// prefix ending in '/', ':' or '.' exports what starts with it.
func exported(topic string, prefixes []string) bool {
	for _, p := range prefixes {
		switch {
		case p == "":
		case topic == p:
			return true
		case strings.HasSuffix(p, "/") || strings.HasSuffix(p, ":") || strings.HasSuffix(p, "."):
			if strings.HasPrefix(topic, p) {
				return true
			}
		case strings.HasPrefix(topic, p) && strings.ContainsRune("/:.", rune(topic[len(p)])):
			return true
		}
	}
	return false
}

// linkTopic checks a topic named over the link.
func linkTopic(host, topic string, exports []string) error {
	if strings.Contains(topic, "@") {
		return wire.Errorf(wire.CodeBadRequest, "topic %q names another host; topics are not relayed across hosts", topic)
	}
	if err := wire.ValidateTopic(topic); err != nil {
		return badRequest(err)
	}
	if !exported(topic, exports) {
		return wire.Errorf(wire.CodeNotFound, "topic %q is not exported to %s (intercom-bridge --export)", topic, host)
	}
	return nil
}

// bridgeTopic runs a topic operation that a remote session asked for.
func (b *Broker) bridgeTopic(req wire.BridgeTopic) (*wire.BridgeTopicReply, error) {
	if !wire.ValidHost(req.Host) {
		return nil, wire.Errorf(wire.CodeBadRequest, "bridge topic: invalid host %q", req.Host)
	}
	lim := limitsOf(req.Limits)
	if req.Op == "topics" {
		return b.remoteTopics(req)
	}
	if err := validRemotePeer(req.From); err != nil {
		return nil, err
	}
	peer := wire.Peer{ID: req.From.ID + "@" + req.Host, Name: req.From.Name + "@" + req.Host, Cwd: req.From.Cwd}
	switch req.Op {
	case "subscribe", "unsubscribe":
		if req.Subscribe == nil {
			return nil, wire.Errorf(wire.CodeBadRequest, "bridge topic: subscription missing")
		}
		s := *req.Subscribe
		s.SessionID = peer.ID
		if err := linkTopic(req.Host, s.Topic, req.Exports); err != nil {
			return nil, err
		}
		if req.Op == "unsubscribe" {
			res, err := b.unsubscribeTopic(s)
			if err == nil && res.Existed {
				b.ledger.topicUsage(peer.ID, 0, 0, -1)
			}
			return &wire.BridgeTopicReply{Subscribe: res}, err
		}
		u := b.ledger.usage(req.Host)
		if u.subs >= lim.Subscriptions && !b.subscribed(s.Topic, peer.ID) {
			return nil, quotaError(req.Host, "has %d topic subscriptions here (max %d)", u.subs, lim.Subscriptions)
		}
		res, err := b.subscribeTopic(s)
		if err != nil {
			return nil, err
		}
		if !res.Existed {
			b.ledger.topicUsage(peer.ID, 0, 0, 1)
		}
		return &wire.BridgeTopicReply{Subscribe: res}, nil
	case "publish":
		if req.Publish == nil {
			return nil, wire.Errorf(wire.CodeBadRequest, "bridge topic: publication missing")
		}
		return b.remotePublish(req.Host, peer, *req.Publish, req.Exports, lim)
	}
	return nil, wire.Errorf(wire.CodeBadRequest, "bridge topic: unknown op %q", req.Op)
}

// remotePublish stores a remote session's publication within its host's
// quota; a release must come from the resource's holder.
func (b *Broker) remotePublish(host string, peer wire.Peer, pub wire.PublishRequest, exports []string, lim wire.BridgeLimits) (*wire.BridgeTopicReply, error) {
	if err := linkTopic(host, pub.Topic, exports); err != nil {
		return nil, err
	}
	if err := wire.ValidatePublish(&pub); err != nil {
		return nil, err
	}
	if releases(pub) && pub.Resource == "" {
		return nil, wire.Errorf(wire.CodeBadRequest, "a release over the bridge must name the resource it releases (--resource)")
	}
	var old store.TopicRecord
	existed := false
	_ = b.st.View(func(txn *store.Txn) error {
		var err error
		old, existed, err = txn.TopicRecord(pub.Topic, peer.ID)
		return err
	})
	oldSize, newSize := int64(0), recordSize(pub.Message, pub.Resource)
	if existed {
		oldSize = recordSize(old.Message, old.Resource)
	}
	added := 1
	if existed {
		added = 0
	}
	u := b.ledger.usage(host)
	records, bytes := u.records, u.recordBytes
	if records+added > lim.TopicRecords {
		return nil, quotaError(host, "has %d topic records here (max %d)", records, lim.TopicRecords)
	}
	if bytes-oldSize+newSize > lim.TopicBytes {
		return nil, quotaError(host, "has %d bytes of topic records here (max %d)", bytes, lim.TopicBytes)
	}
	res, err := b.publishAs(pub, peer)
	if err != nil {
		return nil, err
	}
	if !res.Stale && !res.Duplicate {
		b.ledger.topicUsage(peer.ID, added, newSize-oldSize, 0)
	}
	return &wire.BridgeTopicReply{Publish: res}, nil
}

// remoteTopics lists the exported topics (or one of them), a page at a
// time, within the host's listing budget (listcost.go).
func (b *Broker) remoteTopics(req wire.BridgeTopic) (*wire.BridgeTopicReply, error) {
	if req.Topic != "" {
		if err := linkTopic(req.Host, req.Topic, req.Exports); err != nil {
			return nil, err
		}
	}
	if !b.lists.allow(req.Host) {
		return nil, quotaError(req.Host, "lists topics more than its share here (%d records and subscriptions read a second); retry later", listItemsPerSec)
	}
	all, items, err := b.topicsRead(wire.TopicsRequest{Topic: req.Topic})
	b.lists.charge(req.Host, items)
	if err != nil {
		return nil, err
	}
	kept := all.Topics[:0]
	for _, ti := range all.Topics {
		if exported(ti.Topic, req.Exports) {
			kept = append(kept, ti)
		}
	}
	cutForLink(kept)
	page, next := pageTopics(kept, req.Offset, linkPageBytes)
	return &wire.BridgeTopicReply{Topics: page, NextOffset: next}, nil
}

// subscribed reports whether session sid is subscribed to topic.
func (b *Broker) subscribed(topic, sid string) bool {
	found := false
	_ = b.st.View(func(txn *store.Txn) error {
		var err error
		found, err = txn.Subscribed(topic, sid)
		return err
	})
	return found
}
