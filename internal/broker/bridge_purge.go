package broker

import (
	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Dropping what a bridged host left here: `intercom-bridge purge HOST`
// (everything) and `intercom forget id@host` (one remote session's topic
// records and subscriptions).

const purgeChunk = 500

// bridgePurge drops the host's messages in local inboxes, its topic
// records and subscriptions, its asks and its sessions (and, with Outbox,
// our messages waiting for it).
func (b *Broker) bridgePurge(req wire.BridgePurge) (*wire.BridgePurgeReply, error) {
	if !wire.ValidHost(req.Host) {
		return nil, wire.Errorf(wire.CodeBadRequest, "purge: invalid host %q", req.Host)
	}
	host := req.Host
	out := &wire.BridgePurgeReply{Host: host}
	b.asks.failIf(func(a *ask) bool {
		_, from, fromRemote := wire.SplitRemote(a.from)
		_, to, toRemote := wire.SplitRemote(a.to)
		return (fromRemote && from == host) || (toRemote && to == host)
	})
	inbox := b.ledger.fromHost(host)
	b.routes.remove(host)

	n, err := b.deleteMessages(inbox)
	out.Messages = n
	if err != nil {
		return nil, err
	}
	if req.Outbox {
		var slots []store.Slot
		if err := b.st.View(func(txn *store.Txn) error {
			slots = txn.OutboxSlots(host)
			return nil
		}); err != nil {
			return nil, err
		}
		if out.Outbox, err = b.deleteMessages(slots); err != nil {
			return nil, err
		}
	}
	if out.Records, out.Subscriptions, err = b.dropTopicState(func(sid string) bool {
		_, h, ok := wire.SplitRemote(sid)
		return ok && h == host
	}); err != nil {
		return nil, err
	}
	if err := b.cmt.Wait(func(txn *store.Txn) error { return txn.DeleteRemoteHost(host) }); err != nil {
		return nil, err
	}
	b.ledger.dropHost(host)
	b.log.Info("bridged host purged", "host", host, "messages", out.Messages, "records", out.Records,
		"subscriptions", out.Subscriptions, "outbox", out.Outbox)
	return out, nil
}

// deleteMessages deletes stored messages in chunks and uncounts them; it
// returns how many were there.
func (b *Broker) deleteMessages(slots []store.Slot) (int, error) {
	n := 0
	for len(slots) > 0 {
		chunk := slots[:min(purgeChunk, len(slots))]
		slots = slots[len(chunk):]
		var gone []store.Slot
		err := b.cmt.Wait(func(txn *store.Txn) error {
			gone = gone[:0]
			for _, at := range chunk {
				deleted, err := txn.DeleteMessageAt(at)
				if err != nil {
					return err
				}
				if deleted {
					gone = append(gone, at)
				}
			}
			return nil
		})
		if err != nil {
			return n, classify(err)
		}
		b.ledger.removed(gone...)
		n += len(gone)
	}
	return n, nil
}

// dropTopicState deletes the topic records and subscriptions of the
// sessions match accepts; it returns how many of each.
func (b *Broker) dropTopicState(match func(sid string) bool) (records, subs int, err error) {
	var refs []store.TopicRef
	if err := b.st.View(func(txn *store.Txn) error {
		refs = txn.TopicRefs(match)
		return nil
	}); err != nil {
		return 0, 0, err
	}
	for len(refs) > 0 {
		chunk := refs[:min(purgeChunk, len(refs))]
		refs = refs[len(chunk):]
		type drop struct {
			sid   string
			bytes int64
			rec   bool
		}
		var dropped []drop
		err := b.cmt.Wait(func(txn *store.Txn) error {
			dropped = dropped[:0]
			for _, ref := range chunk {
				r, found, err := txn.DeleteTopicRef(ref)
				if err != nil {
					return err
				}
				if !found {
					continue
				}
				d := drop{sid: ref.Session, rec: ref.Record}
				if d.rec {
					d.bytes = recordSize(r.Message, r.Resource)
				}
				dropped = append(dropped, d)
			}
			return nil
		})
		if err != nil {
			return records, subs, classify(err)
		}
		for _, d := range dropped {
			if d.rec {
				records++
				b.ledger.topicUsage(d.sid, -1, -d.bytes, 0)
			} else {
				subs++
				b.ledger.topicUsage(d.sid, 0, 0, -1)
			}
		}
	}
	return records, subs, nil
}

// forgetRemote drops a remote session's topic records and subscriptions
// here, and the asks it left.
func (b *Broker) forgetRemote(sid string) (*wire.Empty, error) {
	if _, host, _ := wire.SplitRemote(sid); !wire.ValidHost(host) {
		return nil, wire.Errorf(wire.CodeBadRequest, "forget: invalid host in %q", sid)
	}
	b.asks.retireOf(sid)
	records, subs, err := b.dropTopicState(func(s string) bool { return s == sid })
	if err != nil {
		return nil, err
	}
	if records+subs == 0 {
		return nil, wire.Errorf(wire.CodeNotFound, "no topic records or subscriptions of %s here (its sessions are listed by its own host)", sid)
	}
	b.log.Info("remote session forgotten", "id", sid, "records", records, "subscriptions", subs)
	return &wire.Empty{}, nil
}
