package broker

import (
	"bytes"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// Answering accepted sends. Replies are written without reflection
// (wire.AppendSendReply); a lean request (wire.SendRequest.Lean) gets only
// the recipient's id and name; the replies to a pipelining client
// (wire.SendRequest.BatchReply) committed in one batch go out together, as
// one message per reply prefix once the batch's answers are made
// (flushReplies, the committer's AfterBatch).

// maxBatchedReplies bounds the lines of one batch message.
const maxBatchedReplies = 1024

// replyBatch holds the batched replies of the commit batch being answered.
type replyBatch struct {
	mu       sync.Mutex
	byPrefix map[string]*prefixReplies
	order    []string // prefixes in the order of their first reply
}

type prefixReplies struct {
	n     int
	token string // the one reply's token while n is 1
	first []byte // the one reply while n is 1
	lines []byte // AppendBatchedReply lines once n > 1
}

// respondSent answers an accepted send with reply.
func (b *Broker) respondSent(m *nats.Msg, req *wire.SendRequest, reply wire.SendReply) {
	if m.Reply == "" {
		return
	}
	if req.Lean {
		reply.To = wire.LeanRecipient(reply.To)
	}
	data := wire.AppendSendReply(make([]byte, 0, 256), &reply)
	if answeredInBatch(m, data) {
		return
	}
	if i := strings.LastIndexByte(m.Reply, '.'); req.BatchReply && i > 0 {
		b.answer.add(m.Reply[:i], m.Reply[i+1:], data)
		return
	}
	_ = m.Respond(data)
}

func (r *replyBatch) add(prefix, token string, data []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byPrefix == nil {
		r.byPrefix = map[string]*prefixReplies{}
	}
	p := r.byPrefix[prefix]
	if p == nil {
		p = &prefixReplies{}
		r.byPrefix[prefix] = p
		r.order = append(r.order, prefix)
	}
	switch p.n {
	case 0:
		p.token, p.first = token, data
	case 1:
		p.lines = wire.AppendBatchedReply(make([]byte, 0, 4096), p.token, p.first)
		p.first = nil
		fallthrough
	default:
		p.lines = wire.AppendBatchedReply(p.lines, token, data)
	}
	p.n++
}

// flushReplies sends the batched replies queued: a lone one to its own
// subject, several as batch messages.
func (b *Broker) flushReplies() {
	r := &b.answer
	r.mu.Lock()
	byPrefix, order := r.byPrefix, r.order
	r.byPrefix, r.order = nil, nil
	r.mu.Unlock()
	for _, prefix := range order {
		p := byPrefix[prefix]
		if p.n == 1 {
			_ = b.nc.Publish(prefix+"."+p.token, p.first)
			continue
		}
		for rest := p.lines; len(rest) > 0; {
			end := afterLines(rest, maxBatchedReplies)
			_ = b.nc.Publish(prefix+"."+wire.ReplyBatchToken, rest[:end])
			rest = rest[end:]
		}
	}
}

// afterLines is where the first n lines of text end (all of it when it
// holds fewer).
func afterLines(text []byte, n int) int {
	end := 0
	for ; n > 0; n-- {
		i := bytes.IndexByte(text[end:], '\n')
		if i < 0 {
			return len(text)
		}
		end += i + 1
	}
	return end
}
