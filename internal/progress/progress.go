// Package progress shows a one-line live status while a command waits on a
// person's terminal: "waiting for planner… 12s (Ctrl-C cancels)", redrawn in
// place every second and erased when the wait ends. Off a terminal, or when
// the caller prints JSON, it shows nothing.
package progress

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/intercom-dev/intercom/internal/tty"
)

// eraseLine returns the cursor to column 0 and clears the line.
const eraseLine = "\r\x1b[K"

// Start shows "label… Ns (Ctrl-C cancels)" on w until the returned stop is
// called, when w is a terminal and enabled is true (callers pass !json).
// stop erases the line and may be called more than once.
func Start(w io.Writer, enabled bool, label string) (stop func()) {
	if !enabled || !tty.Is(w) {
		return func() {}
	}
	t := time.NewTicker(time.Second)
	return run(w, label, tty.Width(w), time.Now(), t.C, t.Stop)
}

// run draws at once and on every tick (a tick carries the time it fired),
// counting from start, until stopped.
func run(w io.Writer, label string, width int, start time.Time, ticks <-chan time.Time, stopTicks func()) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	draw := func(at time.Time) {
		line := fmt.Sprintf("%s… %ds (Ctrl-C cancels)", label, int(at.Sub(start)/time.Second))
		if width > 1 {
			line = ansi.Truncate(line, width-1, "…")
		}
		fmt.Fprint(w, eraseLine+line)
	}
	draw(start)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				fmt.Fprint(w, eraseLine)
				return
			case at := <-ticks:
				draw(at)
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			stopTicks()
			close(done)
			wg.Wait()
		})
	}
}
