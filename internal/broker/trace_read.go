package broker

import (
	"slices"
	"time"

	"errors"

	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Reading and keeping timelines: traceOf answers `intercom trace`; an ack
// keeps the timeline of what it removes (keepTrace, keepUnstoredTrace).

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
		out.Pushed, out.Fetched = txn.TraceEvents(req.ID)
		if st, err := txn.Trace(req.ID); err == nil {
			acked := st.Acked
			out.From, out.To, out.Stored, out.Acked = st.From, st.To, st.Stored, &acked
			out.Pushed, out.Fetched = mergeTimes(st.Pushed, out.Pushed), mergeTimes(st.Fetched, out.Fetched)
			out.State, found = "acked", true
			return nil
		} else if errors.Is(err, store.ErrUnreadable) {
			return nil
		}
		at, ok := txn.MessageSlot(req.ID)
		if !ok {
			return nil
		}
		if m, err := txn.MessageAt(at); err == nil {
			out.From, out.To, out.Stored, out.State, found = m.From, m.To, m.SentAt, "stored", true
			out.FromPerson = m.FromPerson
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !found {
		if held, ok := b.heldTrace(req.ID); ok {
			return held, nil
		}
		return nil, wire.Errorf(wire.CodeNotFound, "no message %q (unknown, or acknowledged more than 7 days ago)", req.ID)
	}
	pushed, fetched := b.traces.events(req.ID)
	out.Pushed, out.Fetched = mergeTimes(out.Pushed, pushed), mergeTimes(out.Fetched, fetched)
	if out.State == "stored" {
		switch {
		case len(out.Pushed) > 0:
			out.State = "pushed"
		case len(out.Fetched) > 0:
			out.State = "fetched"
		}
	}
	b.noteHeld(out)
	return out, nil
}

// keepTrace writes the delivery timeline of a message being acknowledged,
// from memory when its push or fetch was recorded by this broker, else
// from the stored message.
func (b *Broker) keepTrace(txn *store.Txn, id string, at store.Slot) error {
	st, ok := b.traces.timeline(id)
	if !ok {
		m, err := txn.MessageAt(at)
		if err != nil {
			return nil
		}
		st.From, st.To, st.Stored = m.From, m.To, m.SentAt
	}
	st.Acked = time.Now().UTC()
	// The stored events are not read here (an iterator per acked message
	// is too costly on the ack path) nor deleted: they expire with
	// the trace, and traceOf merges them in, which is how events from
	// before a restart show.
	return putTrace(txn, id, st)
}

// keepUnstoredTrace records the ack of an id that is not stored: acked
// again (its trace is kept already), or acked before its send was committed
// (pushed early by a broker that died, then retried), which the retried send
// finds (Txn.Acked) and does not store. The trace then says acked, with the
// events known and no stored time.
func (b *Broker) keepUnstoredTrace(txn *store.Txn, sid, id string) error {
	if kept, err := txn.HasTrace(id); kept || err != nil {
		return nil // kept already, or unreadable: leave it
	}
	st := store.Trace{To: sid, Acked: time.Now().UTC()}
	st.Pushed, st.Fetched = b.traces.events(id)
	return putTrace(txn, id, st)
}

func putTrace(txn *store.Txn, id string, st store.Trace) error {
	return txn.PutTrace(id, st, traceTTL)
}
