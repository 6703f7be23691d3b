package progress

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The status redraws in place with the elapsed seconds on each tick and is
// erased at the end.
func TestRunRedrawsAndErases(t *testing.T) {
	t.Parallel()
	var out syncBuf
	start := time.Unix(1000, 0)
	ticks := make(chan time.Time)
	stopped := false
	stop := run(&out, "waiting for planner", 0, start, ticks, func() { stopped = true })
	for i := 1; i <= 12; i++ {
		ticks <- start.Add(time.Duration(i)*time.Second + 300*time.Millisecond) // received by the drawing goroutine
	}
	stop()
	stop() // idempotent
	got := out.String()
	if !strings.HasPrefix(got, "\r\x1b[Kwaiting for planner… 0s (Ctrl-C cancels)") {
		t.Fatalf("first draw: %q", got)
	}
	if !strings.Contains(got, "\r\x1b[Kwaiting for planner… 11s (Ctrl-C cancels)") {
		t.Fatalf("no redraw at 11s: %q", got)
	}
	if !strings.HasSuffix(got, "waiting for planner… 12s (Ctrl-C cancels)\r\x1b[K") {
		t.Fatalf("not erased after the last draw: %q", got)
	}
	if strings.Contains(got, "\n") || !stopped {
		t.Fatalf("status wrote a newline or left the ticker running: %q", got)
	}
}

func TestRunFitsTheTerminal(t *testing.T) {
	t.Parallel()
	var out syncBuf
	stop := run(&out, strings.Repeat("x", 200), 40, time.Now(), make(chan time.Time), func() {})
	stop()
	line := strings.TrimPrefix(strings.TrimSuffix(out.String(), eraseLine), eraseLine)
	if n := len([]rune(line)); n > 39 {
		t.Fatalf("status is %d columns on a 40-column terminal: %q", n, line)
	}
}

// Off a terminal, or disabled (JSON), nothing is written.
func TestStartSilentOffTerminal(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	Start(&b, true, "waiting")()
	Start(&b, false, "waiting")()
	if b.Len() != 0 {
		t.Fatalf("wrote %q to a non-terminal", b.String())
	}
}
