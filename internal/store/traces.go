package store

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	json "github.com/goccy/go-json"

	"github.com/intercom-dev/intercom/internal/jsonappend"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Traces: the delivery timeline of a message (`intercom trace`), under
//
//	trace/<message id>               the Trace kept after its ack (JSON)
//	tev/<message id>/<nanos>-<p|f>   one push (p) or fetch (f) of it (empty)
//
// (<nanos> zero-padded to 20 digits, so events read in time order). Both
// expire (a TTL set by the caller).

const (
	tracePrefix       = "trace/"
	traceEventsPrefix = "tev/"
)

// Trace is the timeline of a message kept after its ack.
type Trace struct {
	From    wire.Peer   `json:"from"`
	To      string      `json:"to"`
	Stored  time.Time   `json:"stored_at"`
	Pushed  []time.Time `json:"pushed_at,omitempty"`
	Fetched []time.Time `json:"fetched_at,omitempty"`
	Acked   time.Time   `json:"acked_at"`
}

func traceKey(id string) string         { return tracePrefix + id }
func traceEventPrefix(id string) string { return traceEventsPrefix + id + "/" }

func traceEventKey(id string, at time.Time, fetch bool) string {
	kind := "p"
	if fetch {
		kind = "f"
	}
	return fmt.Sprintf("%s%020d-%s", traceEventPrefix(id), at.UnixNano(), kind)
}

// parseTraceEvent reads an event key of message id.
func parseTraceEvent(id, key string) (at time.Time, fetch, ok bool) {
	rest, found := strings.CutPrefix(key, traceEventPrefix(id))
	nanos, kind, cut := strings.Cut(rest, "-")
	n, err := strconv.ParseInt(nanos, 10, 64)
	if !found || !cut || err != nil || (kind != "p" && kind != "f") {
		return time.Time{}, false, false
	}
	return time.Unix(0, n).UTC(), kind == "f", true
}

// Trace returns the timeline kept for message id, ErrNotFound, or
// ErrUnreadable.
func (t *Txn) Trace(id string) (Trace, error) {
	v, err := t.Get(traceKey(id))
	if err != nil {
		return Trace{}, err
	}
	var tr Trace
	if err := json.Unmarshal(v, &tr); err != nil {
		return Trace{}, errors.Join(ErrUnreadable, err)
	}
	return tr, nil
}

// HasTrace reports whether a timeline is kept for message id.
func (t *Txn) HasTrace(id string) (bool, error) { return t.Has(traceKey(id)) }

// PutTrace keeps tr as the timeline of message id for keep.
func (t *Txn) PutTrace(id string, tr Trace, keep time.Duration) error {
	return t.SetTTL(traceKey(id), appendTrace(make([]byte, 0, 160), &tr), keep)
}

// appendTrace writes tr as json.Marshal does, without reflection (a trace
// is written at every ack).
func appendTrace(dst []byte, tr *Trace) []byte {
	dst = append(dst, `{"from":`...)
	dst = wire.AppendPeer(dst, &tr.From)
	dst = append(dst, `,"to":`...)
	dst = jsonappend.String(dst, tr.To)
	dst = append(dst, `,"stored_at":`...)
	dst = jsonappend.Time(dst, tr.Stored)
	times := func(k string, ts []time.Time) {
		if len(ts) == 0 {
			return
		}
		dst = append(dst, k...)
		for i, at := range ts {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonappend.Time(dst, at)
		}
		dst = append(dst, ']')
	}
	times(`,"pushed_at":[`, tr.Pushed)
	times(`,"fetched_at":[`, tr.Fetched)
	dst = append(dst, `,"acked_at":`...)
	dst = jsonappend.Time(dst, tr.Acked)
	return append(dst, '}')
}

// PutTraceEvent keeps for keep that message id was pushed (or, with
// fetch, fetched) at.
func (t *Txn) PutTraceEvent(id string, at time.Time, fetch bool, keep time.Duration) error {
	return t.SetTTL(traceEventKey(id, at, fetch), nil, keep)
}

// TraceEvents returns the pushes and fetches kept of message id, oldest
// first.
func (t *Txn) TraceEvents(id string) (pushed, fetched []time.Time) {
	t.Keys(traceEventPrefix(id), func(key string) bool {
		if at, fetch, ok := parseTraceEvent(id, key); ok {
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
