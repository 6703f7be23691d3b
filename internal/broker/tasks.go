package broker

import (
	"sync"
	"time"
)

// tasks tracks the goroutines and timers the broker starts, so that Close
// can cancel what is pending and wait until none of them is running. Once
// stopped it starts nothing more: Go reports false and After arms no timer.
type tasks struct {
	mu      sync.Mutex
	running sync.WaitGroup
	stopped bool
	timers  map[*taskTimer]struct{}
	done    chan struct{} // closed by stop
}

func newTasks() *tasks {
	return &tasks{timers: map[*taskTimer]struct{}{}, done: make(chan struct{})}
}

// Go runs fn in a tracked goroutine, unless the broker is stopping.
func (t *tasks) Go(fn func()) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return false
	}
	t.running.Add(1)
	go func() {
		defer t.running.Done()
		fn()
	}()
	return true
}

// taskTimer is a timer armed by tasks.After.
type taskTimer struct {
	t  *tasks
	tm *time.Timer
}

// After runs fn in a tracked goroutine once d has passed, unless the timer
// is stopped or the broker stops first. It returns nil once stopping (a nil
// timer's Stop does nothing).
func (t *tasks) After(d time.Duration, fn func()) *taskTimer {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return nil
	}
	x := &taskTimer{t: t}
	t.timers[x] = struct{}{}
	// The callback takes t.mu first, so it runs after x.tm is set here.
	x.tm = time.AfterFunc(d, func() {
		t.mu.Lock()
		_, armed := t.timers[x]
		delete(t.timers, x)
		if !armed || t.stopped {
			t.mu.Unlock()
			return
		}
		t.running.Add(1)
		t.mu.Unlock()
		defer t.running.Done()
		fn()
	})
	return x
}

// Stop cancels the timer if it has not fired.
func (x *taskTimer) Stop() {
	if x == nil {
		return
	}
	x.t.mu.Lock()
	defer x.t.mu.Unlock()
	delete(x.t.timers, x)
	x.tm.Stop()
}

// Done is closed when the broker begins to stop; long waits end on it.
func (t *tasks) Done() <-chan struct{} { return t.done }

// Stopping reports whether stop was called.
func (t *tasks) Stopping() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stopped
}

// stop cancels every pending timer, ends long waits (Done) and refuses new
// tasks; wait then waits for the running ones.
func (t *tasks) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	t.stopped = true
	for x := range t.timers {
		x.tm.Stop()
	}
	clear(t.timers)
	close(t.done)
}

// wait blocks until no tracked goroutine is running; call it after stop.
func (t *tasks) wait() { t.running.Wait() }
