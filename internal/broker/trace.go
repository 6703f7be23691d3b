package broker

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Delivery timelines (`intercom trace`). Every push to a holder and every
// fetch by inbox is kept in memory and written to the store as an event key
// (tev/<id>/<unix nanos>-<p|f>) by the trace writer: one lingering committer
// op at a time, so events share the fsync of the next send instead of
// costing their own. A broker restart therefore keeps the timeline; only
// events of the last moment before a crash (not yet committed) can be
// missing. An ack writes the stored trace (trace/<id>) with the events in
// memory; the event keys expire with it and traceOf merges both.
// A peek (inbox --peek, status) is not a fetch and records nothing.

const (
	maxTraces     = 100000 // unacked messages with a timeline in memory
	maxTraceQueue = 100000 // events waiting for the trace writer
	traceTTL      = 7 * 24 * time.Hour
)

type trace struct {
	pushed, fetched []time.Time
}

// traceEvent is one push or fetch to write.
type traceEvent struct {
	id    string
	at    time.Time
	fetch bool
}

// traceLog is the trace writer's state; queue is guarded by Broker.mu.
type traceLog struct {
	queue   []traceEvent
	writing int // events submitted, not yet committed
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

func (b *Broker) traceLocked(id string) *trace {
	t := b.traces[id]
	if t == nil {
		if len(b.traces) >= maxTraces {
			for k := range b.traces {
				delete(b.traces, k)
				break
			}
		}
		t = &trace{}
		b.traces[id] = t
	}
	return t
}

// recordLocked notes a push (or a fetch) of message id at now, in memory
// and for the trace writer.
func (b *Broker) recordLocked(id string, now time.Time, fetch bool) {
	now = now.UTC()
	t := b.traceLocked(id)
	if fetch {
		t.fetched = append(t.fetched, now)
	} else {
		t.pushed = append(t.pushed, now)
	}
	if b.tlog.kick == nil || len(b.tlog.queue) >= maxTraceQueue {
		return
	}
	b.tlog.queue = append(b.tlog.queue, traceEvent{id: id, at: now, fetch: fetch})
	select {
	case b.tlog.kick <- struct{}{}:
	default:
	}
}

// startTraceWriter runs the trace writer until stopTraceWriter; it must
// stop before the committer closes.
func (b *Broker) startTraceWriter() {
	kick, stop, done := make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	b.mu.Lock()
	b.tlog.kick, b.tlog.stop, b.tlog.done = kick, stop, done
	b.mu.Unlock()
	go b.traceWriter(kick, stop, done)
}

func (b *Broker) stopTraceWriter() {
	b.mu.Lock()
	stop, done := b.tlog.stop, b.tlog.done
	b.tlog.stop = nil
	b.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

func (b *Broker) traceWriter(kick, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for stopping := false; !stopping; {
		select {
		case <-kick:
		case <-stop:
			stopping = true // write what is queued, then end
		}
		b.mu.Lock()
		evs := b.tlog.queue
		b.tlog.queue = nil
		b.tlog.writing = len(evs)
		b.mu.Unlock()
		if len(evs) == 0 {
			continue
		}
		written := make(chan struct{})
		b.cmt.Submit(store.Op{
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
					b.log.Debug("trace events not stored", "events", len(evs), "err", err)
				}
				b.mu.Lock()
				b.tlog.writing = 0
				b.mu.Unlock()
				close(written)
			},
			Size:   64 * len(evs),
			Linger: true,
		})
		<-written
	}
}

// storedTrace is the timeline kept after an ack.
type storedTrace struct {
	From    wire.Peer   `json:"from"`
	To      string      `json:"to"`
	Stored  time.Time   `json:"stored_at"`
	Pushed  []time.Time `json:"pushed_at,omitempty"`
	Fetched []time.Time `json:"fetched_at,omitempty"`
	Acked   time.Time   `json:"acked_at"`
}

// storedEvents reads the event keys of id.
func storedEvents(txn *store.Txn, id string) (pushed, fetched []time.Time) {
	txn.Keys(store.TraceEventPrefix(id), func(key string) bool {
		if at, fetch, ok := store.ParseTraceEvent(id, key); ok {
			if fetch {
				fetched = append(fetched, at)
			} else {
				pushed = append(pushed, at)
			}
		}
		return true
	})
	return pushed, fetched
}

// mergeTimes returns the distinct times of all lists, oldest first.
func mergeTimes(lists ...[]time.Time) []time.Time {
	var out []time.Time
	for _, l := range lists {
		out = append(out, l...)
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return slices.CompactFunc(out, func(a, b time.Time) bool { return a.Equal(b) })
}

// traceOf answers `intercom trace`.
func (b *Broker) traceOf(req wire.TraceRequest) (*wire.Trace, error) {
	out := &wire.Trace{ID: req.ID}
	found := false
	err := b.st.View(func(txn *store.Txn) error {
		out.Pushed, out.Fetched = storedEvents(txn, req.ID)
		if v, err := txn.Get(store.TraceKey(req.ID)); err == nil {
			var st storedTrace
			if json.Unmarshal(v, &st) == nil {
				acked := st.Acked
				out.From, out.To, out.Stored, out.Acked = st.From, st.To, st.Stored, &acked
				out.Pushed, out.Fetched = mergeTimes(st.Pushed, out.Pushed), mergeTimes(st.Fetched, out.Fetched)
				out.State, found = "acked", true
			}
			return nil
		}
		key, err := txn.Get(store.MessageIndexKey(req.ID))
		if err != nil {
			return nil
		}
		v, err := txn.Get(string(key))
		if err != nil {
			return nil
		}
		var m wire.Message
		if json.Unmarshal(v, &m) == nil {
			out.From, out.To, out.Stored, out.State, found = m.From, m.To, m.SentAt, "stored", true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, wire.Errorf(wire.CodeNotFound, "no message %q (unknown, or acknowledged more than 7 days ago)", req.ID)
	}
	b.mu.Lock()
	if t := b.traces[req.ID]; t != nil {
		out.Pushed, out.Fetched = mergeTimes(out.Pushed, t.pushed), mergeTimes(out.Fetched, t.fetched)
	}
	b.mu.Unlock()
	if out.State == "stored" {
		switch {
		case len(out.Pushed) > 0:
			out.State = "pushed"
		case len(out.Fetched) > 0:
			out.State = "fetched"
		}
	}
	return out, nil
}

// keepTrace writes the delivery timeline of a message being acknowledged.
func (b *Broker) keepTrace(txn *store.Txn, id string, key []byte) error {
	v, err := txn.Get(string(key))
	if err != nil {
		return nil
	}
	var m wire.Message
	if json.Unmarshal(v, &m) != nil {
		return nil
	}
	st := storedTrace{From: m.From, To: m.To, Stored: m.SentAt, Acked: time.Now().UTC()}
	st.Pushed, st.Fetched = b.memEvents(id)
	return putTrace(txn, id, st)
}

// memEvents returns id's events this broker recorded. The stored event
// keys are not read here (an iterator per acked message is too costly on
// the ack path) nor deleted: they expire with the trace, and traceOf merges
// them in, which is how events from before a restart show.
func (b *Broker) memEvents(id string) (pushed, fetched []time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t := b.traces[id]; t != nil {
		return append([]time.Time(nil), t.pushed...), append([]time.Time(nil), t.fetched...)
	}
	return nil, nil
}

// keepUnstoredTrace records the ack of an id that is not stored: acked
// again (its trace is kept already), or acked before its send was committed
// (pushed early by a broker that died, then retried), which the retried send
// finds (ackedKey) and does not store. The trace then says acked, with the
// events known and no stored time.
func (b *Broker) keepUnstoredTrace(txn *store.Txn, sid, id string) error {
	if _, err := txn.Get(store.TraceKey(id)); err != store.ErrNotFound {
		return nil // kept already, or unreadable: leave it
	}
	st := storedTrace{To: sid, Acked: time.Now().UTC()}
	st.Pushed, st.Fetched = b.memEvents(id)
	return putTrace(txn, id, st)
}

func putTrace(txn *store.Txn, id string, st storedTrace) error {
	data, _ := json.Marshal(st)
	return txn.SetTTL(store.TraceKey(id), data, traceTTL)
}
