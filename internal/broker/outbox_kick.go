package broker

import (
	"strconv"
	"sync"

	json "github.com/goccy/go-json"
	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// outboxKicks numbers the broker's announcements of committed outbox
// messages (wire.HeaderOutboxKick): one count for all hosts, taken and
// published under one lock so that the numbers arrive in order. The run
// names this broker process: a new broker's outboxes may hold what the
// bridge was never told of.
type outboxKicks struct {
	mu  sync.Mutex
	run string
	n   uint64
}

// announceOutbox tells the local bridge that msg, committed to host's
// outbox, is there, and numbers the announcement. One that cannot be made
// still takes its number: the gap sends the bridge to read the outbox.
func (b *Broker) announceOutbox(host string, msg wire.Message) {
	data, encErr := json.Marshal(msg)
	k := &b.kicks
	k.mu.Lock()
	defer k.mu.Unlock()
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
