package broker

import (
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// ledger keeps in memory what `list` and the bridge quotas need to know
// about the store, so that nothing rescans it per request: each inbox's and
// each outbox's message count, and what every bridged host holds here (its
// messages in local inboxes, its topic records and subscriptions). It is
// built once at start and updated after each commit. It is a leaf: it
// calls nothing under its lock.
type ledger struct {
	mu     sync.Mutex
	queued map[string]int             // session id → stored, unacknowledged messages
	outbox map[string]int             // host → messages waiting to be forwarded to it
	remote map[store.Slot]remoteEntry // inbox slot → a stored message from a bridged host
	steers steerTimes                 // session id → its stored steers' send times (stuck.go)
	hosts  map[string]*hostUsage      // bridged host → what it holds here
	// how long a message's dedupe and ack keys are kept (the retry memory)
	keepFor time.Duration
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
	subs        int     // topic subscriptions of its sessions
	kept        keptLog // bookkeeping of its messages, kept for the retry memory (kept.go)
	// accepted for commit, not yet stored: counted against the quota
	reserved      int
	reservedBytes int64
}

func newLedger() *ledger {
	return &ledger{queued: map[string]int{}, steers: steerTimes{}, outbox: map[string]int{}, remote: map[store.Slot]remoteEntry{}, hosts: map[string]*hostUsage{},
		keepFor: DefaultRetryMemory}
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

func (l *ledger) usageLocked(host string) *hostUsage {
	u := l.hosts[host]
	if u == nil {
		u = &hostUsage{}
		l.hosts[host] = u
	}
	return u
}

// stored counts a message just stored in slot at.
func (l *ledger) stored(at store.Slot, m *wire.Message) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.storedLocked(at, m)
}

func (l *ledger) storedLocked(at store.Slot, m *wire.Message) {
	if at.Outbox {
		l.outbox[at.Owner]++
		return
	}
	l.queued[at.Owner]++
	l.steers.stored(at, m)
	if host := originHost(m); host != "" {
		e := remoteEntry{host: host, size: int64(m.Size())}
		l.remote[at] = e
		u := l.usageLocked(host)
		u.messages++
		u.bytes += e.size
	}
}

// removed uncounts stored messages that were deleted.
func (l *ledger) removed(slots ...store.Slot) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, at := range slots {
		l.removedLocked(at)
	}
}

func (l *ledger) removedLocked(at store.Slot) {
	counts := l.queued
	if at.Outbox {
		counts = l.outbox
	}
	if counts[at.Owner] > 1 {
		counts[at.Owner]--
	} else {
		delete(counts, at.Owner)
	}
	if !at.Outbox {
		l.steers.removed(at)
	}
	if e, ok := l.remote[at]; ok {
		delete(l.remote, at)
		u := l.usageLocked(e.host)
		u.messages--
		u.bytes -= e.size
	}
}

// topicUsage adjusts the topic usage of sid's host, if sid is remote.
func (l *ledger) topicUsage(sid string, records int, bytes int64, subs int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.topicUsageLocked(sid, records, bytes, subs)
}

func (l *ledger) topicUsageLocked(sid string, records int, bytes int64, subs int) {
	_, host, ok := wire.SplitRemote(sid)
	if !ok {
		return
	}
	u := l.usageLocked(host)
	u.records += records
	u.recordBytes += bytes
	u.subs += subs
}

// recordSize is what a topic record counts against its host's quota.
func recordSize(message, resource string) int64 { return int64(len(message) + len(resource)) }

// loadMessage counts one stored message at start: the store hands each to
// it while it opens (store.OpenVisiting).
func (l *ledger) loadMessage(at store.Slot, m *wire.Message) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.storedLocked(at, m)
}

// load adds the topic records, subscriptions and remote messages'
// bookkeeping to the ledger (once, at start; the stored messages came
// through loadMessage).
func (l *ledger) load(st *store.Store) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return st.View(func(txn *store.Txn) error {
		err := txn.ScanTopicRecords("", func(sid string, r store.TopicRecord) {
			if strings.Contains(sid, "@") {
				l.topicUsageLocked(sid, 1, recordSize(r.Message, r.Resource), 0)
			}
		})
		if err != nil {
			return err
		}
		txn.EachSubscriber(func(sid string) { l.topicUsageLocked(sid, 0, 0, 1) })
		txn.EachSentScope(l.loadKeptLocked)
		return nil
	})
}

// dropSession forgets the counts of a session whose inbox was dropped.
func (l *ledger) dropSession(sid string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.queued, sid)
	delete(l.steers, sid)
	for at := range l.remote {
		if at.InInbox(sid) {
			l.removedLocked(at)
		}
	}
}

// queuedCounts returns every session's stored, unacknowledged messages (no
// store scan).
func (l *ledger) queuedCounts() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.queued)
}

// usage returns a copy of what host holds here.
func (l *ledger) usage(host string) hostUsage {
	l.mu.Lock()
	defer l.mu.Unlock()
	if u := l.hosts[host]; u != nil {
		return *u
	}
	return hostUsage{}
}

// reserve counts a message of size bytes from host, accepted for commit,
// against its inbox quotas: refused when over them, unless the message was
// stored before (known: its retry is answered "duplicate"). unreserve
// takes it back once the commit is done.
func (l *ledger) reserve(host string, size int64, lim wire.BridgeLimits, known bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	u := l.usageLocked(host)
	if !known {
		if u.messages+u.reserved+1 > lim.InboxMessages {
			return quotaError(host, "has %d unread messages here (max %d); retry once they are read", u.messages, lim.InboxMessages)
		}
		if u.bytes+u.reservedBytes+size > lim.InboxBytes {
			return quotaError(host, "has %d bytes of unread messages here (max %d); retry once they are read", u.bytes, lim.InboxBytes)
		}
		if err := l.keptLocked(u, host, lim); err != nil {
			return err
		}
	}
	u.reserved++
	u.reservedBytes += size
	return nil
}

func (l *ledger) unreserve(host string, size int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	u := l.usageLocked(host)
	u.reserved--
	u.reservedBytes -= size
}

// fromHost returns the slots of the stored messages that came from host.
func (l *ledger) fromHost(host string) []store.Slot {
	l.mu.Lock()
	defer l.mu.Unlock()
	var slots []store.Slot
	for at, e := range l.remote {
		if e.host == host {
			slots = append(slots, at)
		}
	}
	return slots
}

// dropHost forgets the usage of a purged host, unless a delivery from it is
// being committed.
func (l *ledger) dropHost(host string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if u := l.hosts[host]; u != nil && u.reserved == 0 {
		delete(l.hosts, host)
	}
}

// outboxes returns every host's outbox depth, and the usage of each host
// that has any.
func (l *ledger) outboxes() (map[string]int, map[string]hostUsage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	usage := make(map[string]hostUsage, len(l.hosts))
	for h, u := range l.hosts {
		usage[h] = *u
	}
	return maps.Clone(l.outbox), usage
}
