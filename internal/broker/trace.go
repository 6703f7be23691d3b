package broker

import (
	"log/slog"
	"sync"
	"time"

	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Delivery timelines (`intercom trace`). Every push to a holder and every
// fetch by inbox is kept in memory and written to the store as an event
// (Txn.PutTraceEvent) by the trace writer, traceWriteAfter after it
// happened: one lingering committer op at a time, so events share the fsync
// of the next send instead of costing their own. An ack writes the stored
// trace (store.Trace) with the events in memory; the stored events expire
// with it and traceOf merges both (trace_read.go). A message acked within
// traceWriteAfter of its push (most are: a holder acks at once) therefore
// costs no event key at all: its ack's stored trace holds the push. A
// broker restart keeps the timeline; only events of the last
// traceWriteAfter + traceWriteEvery before a crash can be missing (a clean
// stop writes every event queued). A peek (inbox --peek, status) is not a
// fetch and records nothing.
//
// The timeline in memory also holds what the stored trace needs of the
// message (sender, recipient, stored time), so that an ack writes it without
// reading the message back.

const (
	maxTraces     = 100000 // unacked messages with a timeline in memory
	maxTraceQueue = 100000 // events waiting for the trace writer
	traceTTL      = 7 * 24 * time.Hour
	// traceWriteAfter: how long an event waits before it is written, so
	// that the ack of a message shown at once makes its event key
	// unnecessary (the fan-in bench: one Badger entry less per message).
	traceWriteAfter = 250 * time.Millisecond
	// traceWriteEvery: the writer's rounds are at least this far apart
	// while events wait, so that each round takes many.
	traceWriteEvery = 100 * time.Millisecond
)

type trace struct {
	pushed, fetched []time.Time
	from            wire.Peer
	to              string
	stored          time.Time
	done            bool // acked or not stored: its queued events are not written
}

// traceEvent is one push or fetch to write.
type traceEvent struct {
	id    string
	at    time.Time // when it happened (UTC, for its key)
	due   time.Time // when it is written (monotonic: clock changes do not move it)
	fetch bool
	tr    *trace
}

// traceTable holds the timelines of unacked messages and the events on
// their way to the store. It is a leaf: taken inside delivery.mu and inside
// committer ops, it calls nothing.
type traceTable struct {
	mu      sync.Mutex
	byID    map[string]*trace
	queue   []traceEvent
	writing int  // events submitted, not yet committed
	open    bool // the writer runs: events are queued for it
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

func newTraceTable() *traceTable {
	return &traceTable{byID: map[string]*trace{}, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

func (t *traceTable) traceLocked(id string) *trace {
	tr := t.byID[id]
	if tr == nil {
		if len(t.byID) >= maxTraces {
			for k := range t.byID {
				delete(t.byID, k)
				break
			}
		}
		tr = &trace{}
		t.byID[id] = tr
	}
	return tr
}

// record notes a push (or a fetch) of message m at now, in memory and for
// the trace writer.
func (t *traceTable) record(m *wire.Message, now time.Time, fetch bool) {
	now = now.UTC()
	id := m.ID
	t.mu.Lock()
	defer t.mu.Unlock()
	tr := t.traceLocked(id)
	tr.from, tr.to, tr.stored = m.From, m.To, m.SentAt
	if fetch {
		tr.fetched = append(tr.fetched, now)
	} else {
		tr.pushed = append(tr.pushed, now)
	}
	if !t.open || len(t.queue) >= maxTraceQueue {
		return
	}
	t.queue = append(t.queue, traceEvent{id: id, at: now, due: time.Now().Add(traceWriteAfter), fetch: fetch, tr: tr})
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// forget drops the timeline of a message that was acked or not stored.
func (t *traceTable) forget(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tr := t.byID[id]; tr != nil {
		tr.done = true
		delete(t.byID, id)
	}
}

// events returns copies of id's events this broker recorded.
func (t *traceTable) events(id string) (pushed, fetched []time.Time) {
	st, _ := t.timeline(id)
	return st.Pushed, st.Fetched
}

// timeline returns what is known in memory of id's timeline: its events,
// and (ok) the message's sender, recipient and stored time, recorded with
// its first push or fetch.
func (t *traceTable) timeline(id string) (st store.Trace, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tr := t.byID[id]
	if tr == nil {
		return st, false
	}
	st.Pushed, st.Fetched = append([]time.Time(nil), tr.pushed...), append([]time.Time(nil), tr.fetched...)
	st.From, st.To, st.Stored = tr.from, tr.to, tr.stored
	return st, tr.to != ""
}

// counts reports the timelines in memory and the events not yet stored
// (stats).
func (t *traceTable) counts() (traces, pending int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byID), len(t.queue) + t.writing
}

// startWriter runs the trace writer until stopWriter; it must stop before
// the committer closes.
func (t *traceTable) startWriter(cmt *store.Committer, log *slog.Logger) {
	t.mu.Lock()
	t.open = true
	t.mu.Unlock()
	go t.writer(cmt, log)
}

// stopWriter writes what is queued and ends the writer. It is idempotent.
func (t *traceTable) stopWriter() {
	t.mu.Lock()
	open := t.open
	t.open = false
	t.mu.Unlock()
	if open {
		close(t.stop)
		<-t.done
	}
}

func (t *traceTable) writer(cmt *store.Committer, log *slog.Logger) {
	defer close(t.done)
	for stopping := false; !stopping; {
		select {
		case <-t.kick:
		case <-t.stop:
			stopping = true // write what is queued, then end
		}
		for { // until the queue is empty: each round takes what is due
			evs, next, more := t.due(stopping)
			if len(evs) > 0 {
				t.write(cmt, log, evs)
			}
			if !more {
				break
			}
			if !stopping { // rounds at most every traceWriteEvery
				select {
				case <-time.After(max(next, traceWriteEvery)):
				case <-t.stop:
					stopping = true
				}
			}
		}
	}
}

// due takes the queued events that are traceWriteAfter old (all of them
// when stopping), dropping those of messages acked meanwhile; more says
// events are left, the oldest due in next.
func (t *traceTable) due(stopping bool) (evs []traceEvent, next time.Duration, more bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	i := 0
	for ; i < len(t.queue); i++ {
		ev := t.queue[i]
		if !stopping && ev.due.After(now) {
			break
		}
		if !ev.tr.done {
			evs = append(evs, ev)
		}
	}
	t.queue = t.queue[i:]
	if len(t.queue) == 0 {
		t.queue = nil // let the taken events go
	}
	t.writing = len(evs)
	if len(t.queue) > 0 {
		return evs, t.queue[0].due.Sub(now), true
	}
	return evs, 0, false
}

// write commits evs as event keys and waits for the commit.
func (t *traceTable) write(cmt *store.Committer, log *slog.Logger, evs []traceEvent) {
	written := make(chan struct{})
	cmt.Submit(store.Op{
		Apply: func(txn *store.Txn) error {
			for _, ev := range evs {
				if err := txn.PutTraceEvent(ev.id, ev.at, ev.fetch, traceTTL); err != nil {
					return err
				}
			}
			return nil
		},
		After: func(err error) {
			if err != nil {
				log.Debug("trace events not stored", "events", len(evs), "err", err)
			}
			t.mu.Lock()
			t.writing = 0
			t.mu.Unlock()
			close(written)
		},
		Size:   64 * len(evs),
		Linger: true,
	})
	<-written
}
