package intercom

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// Pipelined sends: SendAsync publishes a send and returns at once with a
// future that the broker's answer completes, like JetStream's PublishAsync.
// The answers of every async send of a client arrive on one reply
// subscription (a wildcard inbox), so a pipelined sender needs neither a
// goroutine nor a request round trip per message. Sends published by one
// goroutine reach the broker, and so their recipient, in that order.

// SendFuture is a send in flight (SendAsync).
type SendFuture struct {
	c     *Client
	req   wire.SendRequest
	token uint64
	sent  time.Time
	done  chan struct{}
	rep   *wire.SendReply // nil until answered, and when refused
	err   error
}

// asyncSends is the reply subscription of a client's async sends and the
// futures it has not answered yet.
type asyncSends struct {
	mu      sync.Mutex
	sub     *nats.Subscription
	prefix  string // reply subjects are prefix + token (base 36)
	next    uint64
	waiting map[uint64]*SendFuture
}

// sendBufs are the buffers requests are encoded into: the connection
// copies a request as it publishes it, so one buffer serves every send.
var sendBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// SendAsync publishes a send and returns its future. A ClientMsgID is
// generated when empty, so that Wait can send it again, stored once, when
// no answer comes (the broker was restarting). The caller bounds how many
// are in flight (Wait for the oldest before sending more). A pipelined
// sender that reads only the reply's ID and flags sets req.Lean.
func (c *Client) SendAsync(req wire.SendRequest) (*SendFuture, error) {
	if req.ClientMsgID == "" {
		req.ClientMsgID = c.ids.next()
	}
	f := &SendFuture{c: c, req: req, sent: time.Now(), done: make(chan struct{})}
	f.req.BatchReply = true // its answer may come with others' (onReply)
	reply, err := c.async.add(c.nc, f)
	if err != nil {
		return nil, err
	}
	buf := sendBufs.Get().(*[]byte)
	data := wire.AppendSendRequest((*buf)[:0], &f.req)
	err = c.nc.PublishRequest(wire.SubjSend, reply, data)
	*buf = data[:0]
	sendBufs.Put(buf)
	if err != nil {
		c.async.take(f.token)
		return nil, fmt.Errorf("%s: %w", wire.SubjSend, err)
	}
	return f, nil
}

// add registers f and returns its reply subject, subscribing on first use.
func (a *asyncSends) add(nc *nats.Conn, f *SendFuture) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sub == nil {
		a.prefix = nc.NewInbox() + "."
		sub, err := nc.Subscribe(a.prefix+"*", a.onReply)
		if err != nil {
			return "", fmt.Errorf("subscribe send replies: %w", err)
		}
		_ = sub.SetPendingLimits(-1, -1)
		a.sub, a.waiting = sub, map[uint64]*SendFuture{}
	}
	a.next++
	f.token = a.next
	a.waiting[f.token] = f
	var subj [96]byte
	return string(strconv.AppendUint(append(subj[:0], a.prefix...), f.token, 36)), nil
}

// take removes and returns the future of token, nil when it was answered.
func (a *asyncSends) take(token uint64) *SendFuture {
	a.mu.Lock()
	defer a.mu.Unlock()
	f := a.waiting[token]
	delete(a.waiting, token)
	return f
}

func (a *asyncSends) onReply(m *nats.Msg) {
	token := m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]
	if token == wire.ReplyBatchToken { // the replies of several sends (SendRequest.BatchReply)
		for rest := m.Data; ; {
			tok, reply, more, ok := wire.NextBatchedReply(rest)
			if !ok {
				return
			}
			a.answer(tok, reply)
			rest = more
		}
	}
	if len(m.Data) == 0 && m.Header.Get("Status") == "503" {
		if f := a.takeToken(token); f != nil {
			f.finish(nil, nats.ErrNoResponders)
		}
		return
	}
	a.answer(token, m.Data)
}

// takeToken is take of a reply subject's last token.
func (a *asyncSends) takeToken(token string) *SendFuture {
	n, err := strconv.ParseUint(token, 36, 64)
	if err != nil {
		return nil
	}
	return a.take(n)
}

// answer completes the future of token with the reply data.
func (a *asyncSends) answer(token string, data []byte) {
	f := a.takeToken(token)
	if f == nil {
		return
	}
	switch out, err := wire.DecodeSendReply(data); {
	case err != nil:
		f.finish(nil, fmt.Errorf("decode %s reply: %w", wire.SubjSend, err))
	case out.Error != nil:
		f.finish(nil, out.Error)
	case out.Result == nil:
		f.finish(nil, fmt.Errorf("%s: empty reply", wire.SubjSend))
	default:
		f.finish(out.Result, nil)
	}
}

func (f *SendFuture) finish(rep *wire.SendReply, err error) {
	f.rep, f.err = rep, err
	close(f.done)
}

// answer is the finished future's reply and error.
func (f *SendFuture) answer() (wire.SendReply, error) {
	if f.rep == nil {
		return wire.SendReply{}, f.err
	}
	return *f.rep, f.err
}

// Done is closed once the broker answered the send.
func (f *SendFuture) Done() <-chan struct{} { return f.done }

// ClientMsgID is the send's client message id.
func (f *SendFuture) ClientMsgID() string { return f.req.ClientMsgID }

// Wait returns the broker's answer: the reply once the message is durably
// stored, or the refusal. When no answer comes within the client's request
// timeout, or no broker was there to answer, the send is made again with
// its client message id (Send, retried while the broker restarts), which
// the broker stores once.
func (f *SendFuture) Wait(ctx context.Context) (wire.SendReply, error) {
	select { // answered already (the usual case of a pipeline's oldest): no timer
	case <-f.done:
		if !errors.Is(f.err, nats.ErrNoResponders) {
			return f.answer()
		}
		return f.c.Send(ctx, f.req)
	default:
	}
	t := time.NewTimer(time.Until(f.sent.Add(f.c.timeout)))
	defer t.Stop()
	select {
	case <-f.done:
		if !errors.Is(f.err, nats.ErrNoResponders) {
			return f.answer()
		}
	case <-t.C:
		if f.c.async.take(f.token) == nil { // answered meanwhile
			<-f.done
			if !errors.Is(f.err, nats.ErrNoResponders) {
				return f.answer()
			}
		}
	case <-ctx.Done():
		f.c.async.take(f.token)
		return wire.SendReply{}, ctx.Err()
	case <-f.c.ended:
		f.c.async.take(f.token)
		return wire.SendReply{}, f.c.Err()
	}
	return f.c.Send(ctx, f.req)
}
