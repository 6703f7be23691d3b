package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// text is the body of message i: "m<8 digits> " padded to n bytes; the index
// makes every delivery checkable.
func text(i, n int) string {
	s := fmt.Sprintf("m%08d ", i)
	if len(s) < n {
		s += strings.Repeat("x", n-len(s))
	}
	return s
}

// proseWords is proseText's vocabulary: 4,096 made-up words of 3 to 10
// letters, the same in every run.
var proseWords = func() []string {
	rng := rand.New(rand.NewPCG(7, 11))
	words := make([]string, 4096)
	for i := range words {
		w := make([]byte, 3+rng.IntN(8))
		for j := range w {
			w[j] = byte('a' + rng.IntN(26))
		}
		words[i] = string(w)
	}
	return words
}()

// proseText is text with words for padding: message i's words are drawn
// from proseWords, as varied as people's and agents' messages are (about
// 2–3 times compressible, where padding is 10 times).
func proseText(i, n int) string {
	rng := rand.New(rand.NewPCG(uint64(i), 3))
	var b strings.Builder
	b.WriteString(fmt.Sprintf("m%08d ", i))
	for b.Len() < n {
		b.WriteString(proseWords[rng.IntN(len(proseWords))])
		b.WriteByte(' ')
	}
	return b.String()[:max(n, 10)]
}

func parseIdx(t string) (int, bool) {
	if len(t) < 9 || t[0] != 'm' {
		return 0, false
	}
	i, err := strconv.Atoi(t[1:9])
	return i, err == nil
}

func mustJSON(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}

// receiver is a holder that records every message it is handed, acks them
// in batches from a separate goroutine (so that a slow ack never delays the
// arrival time of the next message), and checks exactly-once delivery.
type receiver struct {
	c   *intercom.Client
	s   *intercom.Session
	sid string
	n   int
	// handle runs for each message before its ack is queued (asks reply).
	handle func(ctx context.Context, m wire.Message) error
	// sessionAck: ack through the Session (its bookkeeping, as a holder
	// does) instead of one raw ack request.
	sessionAck bool

	mu      sync.Mutex
	count   []int          // deliveries per index
	at      []time.Time    // first arrival per index
	ids     map[string]int // message id -> index
	strange int            // messages without a bench index
	err     error

	arrived  chan int // index of every first arrival
	acks     chan string
	acked    atomic.Int64
	allAcked chan struct{}
	once     sync.Once
}

func newReceiver(c *intercom.Client, s *intercom.Session, n int) *receiver {
	return &receiver{
		c: c, s: s, sid: s.ID(), n: n,
		count: make([]int, n), at: make([]time.Time, n), ids: make(map[string]int, n),
		arrived: make(chan int, n), acks: make(chan string, n+1024), allAcked: make(chan struct{}),
	}
}

func (r *receiver) start(ctx context.Context) {
	go r.recvLoop(ctx)
	go r.ackLoop(ctx)
}

func (r *receiver) fail(err error) {
	r.mu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.mu.Unlock()
}

func (r *receiver) recvLoop(ctx context.Context) {
	for {
		var m wire.Message
		select {
		case <-ctx.Done():
			return
		case m = <-r.s.Messages():
		}
		now := time.Now()
		idx, ok := parseIdx(m.Text)
		first := false
		r.mu.Lock()
		if !ok || idx < 0 || idx >= r.n {
			r.strange++
		} else {
			r.count[idx]++
			if r.count[idx] == 1 {
				r.at[idx] = now
				first = true
			}
			r.ids[m.ID] = idx
		}
		r.mu.Unlock()
		if r.handle != nil {
			if err := r.handle(ctx, m); err != nil {
				r.fail(err)
			}
		}
		if first {
			r.arrived <- idx
		}
		select {
		case r.acks <- m.ID:
		case <-ctx.Done():
			return
		}
	}
}

func (r *receiver) ackLoop(ctx context.Context) {
	for {
		var batch []string
		select {
		case <-ctx.Done():
			return
		case id := <-r.acks:
			batch = append(batch, id)
		}
	drain:
		for len(batch) < 1000 {
			select {
			case id := <-r.acks:
				batch = append(batch, id)
			default:
				break drain
			}
		}
		k, err := r.ack(ctx, batch)
		if err != nil {
			if ctx.Err() == nil {
				r.fail(fmt.Errorf("ack: %w", err))
			}
			continue
		}
		if r.acked.Add(int64(k)) >= int64(r.n) {
			r.once.Do(func() { close(r.allAcked) })
		}
	}
}

// ack acks batch and returns how many the broker confirmed.
func (r *receiver) ack(ctx context.Context, batch []string) (int, error) {
	if !r.sessionAck {
		return r.c.Ack(ctx, r.sid, batch...)
	}
	if err := r.s.Ack(ctx, batch...); err != nil {
		return 0, err
	}
	return len(batch), nil
}

// waitArrival waits for the first arrival of idx and returns its time.
func (r *receiver) waitArrival(ctx context.Context, idx int, timeout time.Duration) (time.Time, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case got := <-r.arrived:
			if got == idx {
				r.mu.Lock()
				at := r.at[idx]
				r.mu.Unlock()
				return at, nil
			}
		case <-t.C:
			return time.Time{}, fmt.Errorf("message %d not delivered within %s", idx, timeout)
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
}

// waitAcked waits until all n messages are acked.
func (r *receiver) waitAcked(ctx context.Context, timeout time.Duration) error {
	select {
	case <-r.allAcked:
		return nil
	case <-time.After(timeout):
		r.mu.Lock()
		defer r.mu.Unlock()
		got := 0
		for _, c := range r.count {
			if c > 0 {
				got++
			}
		}
		return fmt.Errorf("after %s: %d of %d delivered, %d acked (err %v)", timeout, got, r.n, r.acked.Load(), r.err)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// verify checks exactly-once: every index delivered once, the delivered ids
// are exactly the accepted ids (sent: id -> index), every ack counted, and
// the recipient's durable inbox is empty.
func (r *receiver) verify(ctx context.Context, sent map[string]int) error {
	time.Sleep(50 * time.Millisecond) // let a stray duplicate show up
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	if r.err != nil {
		errs = append(errs, r.err)
	}
	missing, dups := 0, 0
	for _, c := range r.count {
		switch {
		case c == 0:
			missing++
		case c > 1:
			dups += c - 1
		}
	}
	if missing > 0 || dups > 0 || r.strange > 0 {
		errs = append(errs, fmt.Errorf("delivery: %d missing, %d duplicated, %d unexpected of %d", missing, dups, r.strange, r.n))
	}
	if len(sent) != r.n {
		errs = append(errs, fmt.Errorf("accepted %d distinct ids for %d sends", len(sent), r.n))
	}
	for id, idx := range sent {
		if got, ok := r.ids[id]; !ok || got != idx {
			errs = append(errs, fmt.Errorf("accepted id %s (message %d) was not delivered as such", id, idx))
			break
		}
	}
	if len(r.ids) != len(sent) {
		errs = append(errs, fmt.Errorf("delivered %d distinct ids, accepted %d", len(r.ids), len(sent)))
	}
	if a := r.acked.Load(); a != int64(r.n) {
		errs = append(errs, fmt.Errorf("acked %d of %d", a, r.n))
	}
	left, err := r.c.Inbox(ctx, r.sid, 10)
	if err != nil {
		errs = append(errs, fmt.Errorf("inbox: %w", err))
	} else if len(left) > 0 {
		errs = append(errs, fmt.Errorf("%d+ messages left in the inbox after every ack", len(left)))
	}
	return errors.Join(errs...)
}

// sentIDs collects accepted ids from concurrent senders.
type sentIDs struct {
	mu  sync.Mutex
	ids map[string]int
	dup int
}

func newSentIDs(n int) *sentIDs { return &sentIDs{ids: make(map[string]int, n)} }

func (s *sentIDs) add(rep wire.SendReply, idx int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rep.Duplicate {
		s.dup++
	}
	s.ids[rep.ID] = idx
}

func (s *sentIDs) check() error {
	if s.dup > 0 {
		return fmt.Errorf("%d sends answered as duplicates", s.dup)
	}
	return nil
}
