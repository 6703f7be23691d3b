package broker

import (
	"encoding/json"
	"strings"

	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// ledger keeps in memory what `list` and the bridge quotas need to know
// about the store, so that nothing rescans it per request: each inbox's and
// each outbox's message count, and what every bridged host holds here (its
// messages in local inboxes, its topic records and subscriptions). It is
// built once at start and updated after each commit; b.mu guards it.
type ledger struct {
	queued map[string]int         // session id → stored, unacknowledged messages
	outbox map[string]int         // host → messages waiting to be forwarded to it
	remote map[string]remoteEntry // inbox key → a stored message from a bridged host
	hosts  map[string]*hostUsage  // bridged host → what it holds here
}

type remoteEntry struct {
	host string
	size int64
}

// hostUsage is what one bridged host holds on this machine.
type hostUsage struct {
	messages    int   // unacknowledged messages in local inboxes
	bytes       int64 // their size
	records     int   // current topic records of its sessions
	recordBytes int64
	subs        int // topic subscriptions of its sessions
	// accepted for commit, not yet stored: counted against the quota
	reserved      int
	reservedBytes int64
}

func newLedger() *ledger {
	return &ledger{queued: map[string]int{}, outbox: map[string]int{}, remote: map[string]remoteEntry{}, hosts: map[string]*hostUsage{}}
}

// originHost is the bridged host a stored message came from, "" for a
// local one: its sender is a remote session ("<id>@<host>"; the bridge's
// own notices, from "bridge@<host>", are local).
func originHost(m *wire.Message) string {
	_, host, ok := wire.SplitRemote(m.From.ID)
	if !ok || strings.HasPrefix(m.From.ID, noticeSender+"@") {
		return ""
	}
	return host
}

func (l *ledger) usage(host string) *hostUsage {
	u := l.hosts[host]
	if u == nil {
		u = &hostUsage{}
		l.hosts[host] = u
	}
	return u
}

// stored counts a message just stored under key (an inbox or outbox key).
func (l *ledger) stored(key string, m *wire.Message) {
	outbox, owner, ok := store.BoxOwner(key)
	if !ok {
		return
	}
	if outbox {
		l.outbox[owner]++
		return
	}
	l.queued[owner]++
	if host := originHost(m); host != "" {
		e := remoteEntry{host: host, size: int64(m.Size())}
		l.remote[key] = e
		u := l.usage(host)
		u.messages++
		u.bytes += e.size
	}
}

// removed uncounts a stored message that was deleted.
func (l *ledger) removed(key string) {
	outbox, owner, ok := store.BoxOwner(key)
	if !ok {
		return
	}
	counts := l.queued
	if outbox {
		counts = l.outbox
	}
	if counts[owner] > 1 {
		counts[owner]--
	} else {
		delete(counts, owner)
	}
	if e, ok := l.remote[key]; ok {
		delete(l.remote, key)
		u := l.usage(e.host)
		u.messages--
		u.bytes -= e.size
	}
}

// topicUsage adjusts the topic usage of sid's host, if sid is remote.
func (l *ledger) topicUsage(sid string, records int, bytes int64, subs int) {
	_, host, ok := wire.SplitRemote(sid)
	if !ok {
		return
	}
	u := l.usage(host)
	u.records += records
	u.recordBytes += bytes
	u.subs += subs
}

// recordSize is what a topic record counts against its host's quota.
func recordSize(message, resource string) int64 { return int64(len(message) + len(resource)) }

// load builds the ledger from the store (once, at start).
func (l *ledger) load(st *store.Store) error {
	return st.View(func(txn *store.Txn) error {
		for _, prefix := range []string{store.InboxesPrefix, store.OutboxesPrefix} {
			err := txn.Scan(prefix, func(k string, v []byte) (bool, error) {
				var m wire.Message
				if json.Unmarshal(v, &m) == nil {
					l.stored(k, &m)
				}
				return true, nil
			})
			if err != nil {
				return err
			}
		}
		err := txn.Scan(store.TopicRecordsAll, func(k string, v []byte) (bool, error) {
			if sid, ok := store.TopicKeySession(k); ok && strings.Contains(sid, "@") {
				var r storedRecord
				if json.Unmarshal(v, &r) == nil {
					l.topicUsage(sid, 1, recordSize(r.Message, r.Resource), 0)
				}
			}
			return true, nil
		})
		if err != nil {
			return err
		}
		txn.Keys(store.TopicSubsAll, func(k string) bool {
			if sid, ok := store.TopicKeySession(k); ok {
				l.topicUsage(sid, 0, 0, 1)
			}
			return true
		})
		return nil
	})
}

// dropSession forgets the counts of a session whose inbox was dropped.
func (l *ledger) dropSession(sid string) {
	delete(l.queued, sid)
	prefix := store.InboxPrefix(sid)
	for k := range l.remote {
		if strings.HasPrefix(k, prefix) {
			l.removed(k)
		}
	}
}
