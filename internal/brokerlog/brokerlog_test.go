package brokerlog

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// clock is a settable time source.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newFold(buf *bytes.Buffer) (*FoldHandler, *clock, *slog.Logger) {
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	h := Fold(slog.NewTextHandler(buf, nil), time.Minute)
	h.st.now = clk.now
	return h, clk, slog.New(h)
}

// TestFoldRepeatedErrors: identical errors (numbers aside) within the window
// are written once; the next one after the window carries the count of those
// held back, and Flush writes the last held one with its count. Different
// errors, and info lines, are never folded.
func TestFoldRepeatedErrors(t *testing.T) {
	var buf bytes.Buffer
	h, clk, log := newFold(&buf)
	badger := log.With("component", "badger")
	for i := range 100 {
		badger.Error(fmt.Sprintf("error flushing memtable to disk: open %06d.sst: no such file or directory, retrying", 2000+i))
		log.Info("session registered", "n", i)
		clk.t = clk.t.Add(time.Second / 2)
	}
	log.Warn("another warning")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	flush := 0
	for _, l := range lines {
		if strings.Contains(l, "flushing memtable") {
			flush++
		}
	}
	// 50 s of repeats: one line only; 100 info lines and the other warning.
	if flush != 1 || len(lines) != 102 {
		t.Fatalf("got %d flush lines and %d lines in all, want 1 and 102:\n%s", flush, len(lines), buf.String())
	}
	clk.t = clk.t.Add(time.Minute)
	badger.Error("error flushing memtable to disk: open 009999.sst: no such file or directory, retrying")
	last := lastLine(&buf)
	if !strings.Contains(last, "009999.sst") || !strings.Contains(last, "repeated=99") || !strings.Contains(last, "component=badger") {
		t.Fatalf("first line after the window: %q, want it with repeated=99", last)
	}
	badger.Error("error flushing memtable to disk: open 010000.sst: no such file or directory, retrying")
	badger.Error("error flushing memtable to disk: open 010001.sst: no such file or directory, retrying")
	h.Flush()
	if last := lastLine(&buf); !strings.Contains(last, "010001.sst") || !strings.Contains(last, "repeated=2") {
		t.Fatalf("flush wrote %q, want the last held line with repeated=2", last)
	}
	n := strings.Count(buf.String(), "\n")
	h.Flush()
	if strings.Count(buf.String(), "\n") != n {
		t.Fatalf("a second flush wrote again:\n%s", buf.String())
	}
}

func lastLine(b *bytes.Buffer) string {
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	return lines[len(lines)-1]
}

// TestFoldBounded: many distinct errors do not grow the handler's memory
// past maxFolded records, and none of them is lost.
func TestFoldBounded(t *testing.T) {
	var buf bytes.Buffer
	h, _, log := newFold(&buf)
	for i := range 3 * maxFolded {
		log.Error("distinct " + strings.Repeat("x", i%50) + fmt.Sprint(i%7))
	}
	if n := len(h.st.seen); n > maxFolded {
		t.Fatalf("%d records remembered, want at most %d", n, maxFolded)
	}
}

// TestFileRotates: the log file is capped at its size, the full one kept as
// a single backup (older backups removed), new files private.
func TestFileRotates(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "broker.log")
	w := File(path, 1)
	line := []byte(strings.Repeat("y", 1023) + "\n")
	for range 3 << 10 { // 3 MiB through a 1 MiB cap
		if _, err := w.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Size() > 1<<20 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("broker.log: %v, size %d mode %v; want at most 1 MiB, 0600", err, fi.Size(), fi.Mode().Perm())
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		backups, _ := filepath.Glob(filepath.Join(dir, "broker-*.log"))
		if len(backups) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("backups %v, want exactly one", backups)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
