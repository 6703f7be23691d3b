package broker

import (
	"runtime"
	"sync"
	"time"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// stats reports runtime figures, so soak tests can prove that nothing
// accumulates (goroutines, sessions, traces, waiters).
func (b *Broker) stats(struct{}) (*wire.Stats, error) {
	liveHeap.collect() // the figures show what is live, not garbage
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	st := &wire.Stats{Goroutines: runtime.NumGoroutine(), HeapAlloc: ms.HeapAlloc,
		Clients: b.idle.count(), Asks: b.asks.count(), Waiters: b.waiters.count()}
	st.Sessions, st.Connected = b.sessions.counts()
	st.Traces, st.TraceEventsPending = b.traces.counts()
	return st, nil
}

// gcLimit bounds the garbage collections a client asking for stats can
// cause: any client may ask, so at most one a second, and never the
// scavenging of debug.FreeOSMemory.
type gcLimit struct {
	mu   sync.Mutex
	last time.Time
}

// liveHeap is per process, as the collector is.
var liveHeap gcLimit

func (g *gcLimit) collect() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if time.Since(g.last) < time.Second {
		return
	}
	runtime.GC()
	g.last = time.Now()
}
