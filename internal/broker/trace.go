package broker

import (
	"log/slog"
	"sync"
	"time"

	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Delivery timelines (`intercom trace`). Every push to a holder and every
// fetch by inbox is kept in memory and written to the store as an event key
// (store.TraceEventKey) by the trace writer: one lingering committer op at
// a time, so events share the fsync of the next send instead of costing
// their own. A broker restart therefore keeps the timeline; only events of
// the last moment before a crash (not yet committed) can be missing. An ack
// writes the stored trace (store.TraceKey) with the events in memory; the
// event keys expire with it and traceOf merges both (trace_read.go).
// A peek (inbox --peek, status) is not a fetch and records nothing.
//
// The timeline in memory also holds what the stored trace needs of the
// message (sender, recipient, stored time), so that an ack writes it without
// reading the message back; and an event whose message is acked before the
// writer takes it is not written at all: the ack's stored trace holds it.

const (
	maxTraces     = 100000 // unacked messages with a timeline in memory
	maxTraceQueue = 100000 // events waiting for the trace writer
	traceTTL      = 7 * 24 * time.Hour
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
	at    time.Time
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
	t.queue = append(t.queue, traceEvent{id: id, at: now, fetch: fetch, tr: tr})
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
func (t *traceTable) timeline(id string) (st storedTrace, ok bool) {
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
		t.mu.Lock()
		evs := t.queue[:0:0]
		for _, ev := range t.queue {
			if !ev.tr.done {
				evs = append(evs, ev)
			}
		}
		t.queue = nil
		t.writing = len(evs)
		t.mu.Unlock()
		if len(evs) == 0 {
			continue
		}
		written := make(chan struct{})
		cmt.Submit(store.Op{
			Apply: func(txn *store.Txn) error {
				for _, ev := range evs {
					if err := txn.SetTTL(store.TraceEventKey(ev.id, ev.at, ev.fetch), nil, traceTTL); err != nil {
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
}
