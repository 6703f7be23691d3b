package broker

import (
	"time"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// Batched pushes: a holder that takes them (wire.RegisterRequest.Batches)
// is pushed several messages handed on at once (its backlog, chiefly) as
// one JSON array on its delivery subject, up to pushBatchMax messages and
// pushBatchBytes of payload in each: one NATS message, one read and one
// dispatch in the holder for many. Order, the in-flight record and traces
// are those of single pushes; a message larger than pushBatchBytes, and
// every message to a holder that predates batches, goes alone.
const (
	pushBatchMax   = 128
	pushBatchBytes = 256 << 10 // of wire.Message.Size; escaped, well under the server's payload limit
)

// eligibleOf returns the messages of msgs that may be pushed to bx now, in
// order.
func eligibleOf(bx *box, msgs []wire.Message, now time.Time) []*wire.Message {
	out := make([]*wire.Message, 0, len(msgs))
	for i := range msgs {
		if bx.eligible(&msgs[i], now) {
			out = append(out, &msgs[i])
		}
	}
	return out
}

// pushManyLocked hands msgs, eligible and in order, to bx's holder.
func (d *delivery) pushManyLocked(sid string, bx *box, msgs []*wire.Message, now time.Time) {
	if !bx.batches || len(msgs) < 2 {
		for _, m := range msgs {
			d.pushOneLocked(sid, bx, m, now)
		}
		return
	}
	subj := wire.Deliver(sid, bx.token)
	batch := make([]*wire.Message, 0, min(len(msgs), pushBatchMax))
	size := 0
	send := func() {
		switch len(batch) {
		case 0:
		case 1:
			d.publish(subj, batch[0])
		default:
			d.publish(subj, batch)
		}
		batch, size = batch[:0], 0
	}
	for _, m := range msgs {
		d.handOnLocked(sid, bx, m, now)
		n := m.Size()
		if n > pushBatchBytes {
			send()
			d.publish(subj, m)
			continue
		}
		if len(batch) == pushBatchMax || size+n > pushBatchBytes {
			send()
		}
		batch = append(batch, m)
		size += n
	}
	send()
}
