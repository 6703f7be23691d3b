package broker

import (
	"runtime"
	"runtime/debug"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// stats reports runtime figures, so soak tests can prove that nothing
// accumulates (goroutines, sessions, traces, waiters).
func (b *Broker) stats(struct{}) (*wire.Stats, error) {
	debug.FreeOSMemory() // a full GC first, so the figures show what is live
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.mu.Lock()
	defer b.mu.Unlock()
	st := &wire.Stats{Goroutines: runtime.NumGoroutine(), HeapAlloc: ms.HeapAlloc, Sessions: len(b.sessions),
		Clients: len(b.clients), Asks: len(b.asks), Traces: len(b.traces),
		TraceEventsPending: len(b.tlog.queue) + b.tlog.writing}
	for _, s := range b.sessions {
		if s.Connected {
			st.Connected++
		}
	}
	for _, w := range b.waiters {
		st.Waiters += len(w)
	}
	return st, nil
}
