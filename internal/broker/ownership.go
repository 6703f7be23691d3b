package broker

import (
	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Ownership follows its holder. A resource's state is its newest
// declaration (a record naming it declares --ownership held or released). While
// a session holds a resource (connected or not: a departed holder shows as
// unavailable, never as released), only that session may declare it again:
// another session's claim or release is refused with resource_held, local
// or remote alike. The hold of a session nobody knows any more (forgotten,
// or its host purged) is void. Over the bridge a release must also name a
// resource its sender holds: it would otherwise only wake the waiters.

// holderOf returns the record by which a session holds resource on topic,
// or nil when nobody does. It reads in txn, so that the check and the
// write are one transaction.
func (b *Broker) holderOf(txn *store.Txn, topic, resource string) (*store.TopicRecord, error) {
	var newest *store.TopicRecord
	err := txn.ScanTopicRecords(topic, func(_ string, r store.TopicRecord) {
		if r.Resource == resource && (newest == nil || r.Seq > newest.Seq) {
			newest = &r
		}
	})
	if err != nil || newest == nil || newest.Ownership != wire.OwnershipHeld {
		return nil, err
	}
	if _, _, remote := wire.SplitRemote(newest.From.ID); !remote {
		if _, known := b.sessions.get(newest.From.ID); !known {
			return nil, nil // a forgotten session holds nothing
		}
	}
	return newest, nil
}

// releases reports whether a publication frees its resource.
func releases(req wire.PublishRequest) bool {
	return req.Event == wire.EventRelease || req.Ownership == wire.OwnershipReleased
}

// checkOwnership refuses, in the publication's transaction, a declaration
// of peer's that the rule above does not allow.
func (b *Broker) checkOwnership(txn *store.Txn, req wire.PublishRequest, peer wire.Peer) error {
	_, _, remote := wire.SplitRemote(peer.ID)
	releases := releases(req)
	if req.Resource == "" {
		return nil
	}
	h, err := b.holderOf(txn, req.Topic, req.Resource)
	if err != nil {
		return err
	}
	switch {
	case h != nil && h.From.ID != peer.ID && releases:
		return store.Refuse(wire.Errorf(wire.CodeResourceHeld, "resource %s on %s is held by %s; only its holder can release it", req.Resource, req.Topic, b.holderName(h)))
	case h != nil && h.From.ID != peer.ID:
		return store.Refuse(wire.Errorf(wire.CodeResourceHeld, "resource %s on %s is held by %s; it can be claimed once its holder releases it", req.Resource, req.Topic, b.holderName(h)))
	case h == nil && releases && remote:
		return store.Refuse(wire.Errorf(wire.CodeResourceHeld, "resource %s on %s is held by nobody; only its holder can release it", req.Resource, req.Topic))
	}
	return nil
}

// holderName is how a refusal names the holder: its current name.
func (b *Broker) holderName(h *store.TopicRecord) string {
	if name, _, local := b.sessions.nameOf(h.From.ID); local {
		return name
	}
	return h.From.Name
}
