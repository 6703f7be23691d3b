package broker

import (
	"strconv"
	"sync"
	"sync/atomic"

	json "github.com/goccy/go-json"
	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// outboxKicks numbers the broker's announcements of committed outbox
// messages (wire.HeaderOutboxKick): one count for all hosts, taken and
// published under one lock so that the numbers arrive in order. The run
// names this broker process: a new broker's outboxes may hold what the
// bridge was never told of.
//
// A send to a remote session is announced while it is being persisted
// (announceEarly): once its batch is applied, with the batch's other
// remote sends, in op order and before the fsync (announceApplied), so the
// bridge forwards it without waiting for the disk, as a local send is
// pushed early. An ask is announced only once committed (its obligation is
// registered then, before any answer can come back), and a later send to
// the same host applied before that waits behind it (deferred), so the
// announcements stay in outbox order. While any early
// announcement's commit is not finished (pending), a read of the outbox
// first waits for the committer (bridgeOutbox): the bridge drops, at the
// start of a read, what was announced before it, which the read must
// therefore return.
type outboxKicks struct {
	mu       sync.Mutex
	run      string
	n        uint64
	pending  int                 // announced early, not yet committed (or failed)
	deferred map[string]int      // host -> sends to be announced after their commit, not yet committed
	early    []earlyAnnouncement // to announce once the batch is applied (announceApplied)

	testHookApplied atomic.Pointer[func()] // tests: runs after announceApplied, before the commit
}

// earlyAnnouncement is a message stored in host's outbox by an op of the
// batch being applied.
type earlyAnnouncement struct {
	host   string
	data   []byte // the message, encoded
	encErr error
}

// announceOutbox tells the local bridge that msg, committed to host's
// outbox, is there, and numbers the announcement. One that cannot be made
// still takes its number: the gap sends the bridge to read the outbox.
func (b *Broker) announceOutbox(host string, msg wire.Message) {
	data, encErr := json.Marshal(msg)
	k := &b.kicks
	k.mu.Lock()
	defer k.mu.Unlock()
	b.announceLocked(host, data, encErr)
}

// announceLocked is announceOutbox with the message encoded (or not:
// encErr) and b.kicks.mu held.
func (b *Broker) announceLocked(host string, data []byte, encErr error) {
	k := &b.kicks
	if k.run == "" {
		k.run = newMsgID()
	}
	k.n++
	if encErr != nil {
		b.log.Warn("announce outbox message", "host", host, "err", encErr)
		return
	}
	m := &nats.Msg{Subject: wire.BridgeOut(host), Data: data,
		Header: nats.Header{wire.HeaderOutboxKick: []string{k.run + "." + strconv.FormatUint(k.n, 10)}}}
	if err := b.nc.PublishMsg(m); err != nil {
		b.log.Warn("publish", "subject", m.Subject, "err", err)
	}
}

// announceEarly has a remote send p that its op's Apply just stored (not
// a duplicate) announced once its batch is applied (announceApplied),
// unless it is an ask or a send to the same host is waiting for its
// commit to be announced: then p waits for its own (deferred, announced
// by afterRemoteSend). It runs in the committer, once
// per op however often its batch is applied; the wait for the message's
// remote acceptance is registered before the announcement, since the
// bridge's ack may come before the commit ends.
func (b *Broker) announceEarly(p *preparedSend) {
	if p.duplicate != "" || p.announced || p.deferred {
		return
	}
	k := &b.kicks
	var data []byte
	var encErr error
	if !p.ask {
		data, encErr = json.Marshal(p.msg) // outside the lock
	}
	k.mu.Lock()
	if p.ask || k.deferred[p.remote] > 0 {
		if k.deferred == nil {
			k.deferred = map[string]int{}
		}
		k.deferred[p.remote]++
		p.deferred = true
		k.mu.Unlock()
		return
	}
	k.pending++
	k.early = append(k.early, earlyAnnouncement{p.remote, data, encErr})
	k.mu.Unlock()
	p.announced = true
	p.wait = b.routes.expect(p.remote, p.msg.ID)
}

// announceApplied announces what the ops of the batch just applied stored
// in outboxes (announceEarly), together: the bridge then takes them in one
// forward rather than one by one as each op is applied.
func (b *Broker) announceApplied() {
	k := &b.kicks
	k.mu.Lock()
	for _, a := range k.early {
		b.announceLocked(a.host, a.data, a.encErr)
	}
	clear(k.early)
	k.early = k.early[:0]
	k.mu.Unlock()
	if hook := k.testHookApplied.Load(); hook != nil {
		(*hook)()
	}
}

// committedRemote is told that remote send p's commit ended (stored,
// duplicate or failed): an early announcement is no longer pending, a
// deferred one no longer holds back its host's next sends.
func (b *Broker) committedRemote(p *preparedSend) {
	k := &b.kicks
	k.mu.Lock()
	defer k.mu.Unlock()
	if p.announced {
		k.pending--
	}
	if p.deferred {
		if k.deferred[p.remote]--; k.deferred[p.remote] == 0 {
			delete(k.deferred, p.remote)
		}
	}
}

// announcing reports whether an early announcement's commit is not
// finished.
func (b *Broker) announcing() bool {
	k := &b.kicks
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.pending > 0
}
