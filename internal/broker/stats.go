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
	st := &wire.Stats{Goroutines: runtime.NumGoroutine(), HeapAlloc: ms.HeapAlloc,
		Clients: b.idle.count(), Asks: b.asks.count(), Waiters: b.waiters.count()}
	st.Sessions, st.Connected = b.sessions.counts()
	st.Traces, st.TraceEventsPending = b.traces.counts()
	return st, nil
}
