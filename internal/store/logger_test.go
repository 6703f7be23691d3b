package store

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// TestBadgerLoggerLevels: Badger's errors and warnings reach the store's
// logger at their level, trimmed; its info and debug lines only when
// debug logging is on.
func TestBadgerLoggerLevels(t *testing.T) {
	t.Parallel()
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		var buf bytes.Buffer
		b := badgerLogger{l: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: level}))}
		b.Errorf("broke %d\n", 1)
		b.Warningf("careful %s\n", "now")
		b.Infof("info %d", 2)
		b.Debugf("debug %d", 3)
		out := buf.String()
		for _, want := range []string{`level=ERROR msg="broke 1"`, `level=WARN msg="careful now"`} {
			if !strings.Contains(out, want) {
				t.Errorf("level %v: log %q lacks %q", level, out, want)
			}
		}
		debugOn := level == slog.LevelDebug
		if got := strings.Contains(out, `msg="info 2"`) && strings.Contains(out, `msg="debug 3"`); got != debugOn {
			t.Errorf("level %v: info and debug lines logged %t, want %t: %q", level, got, debugOn, out)
		}
	}
}

// TestWrittenSignalsOncePerQuietPeriod: after commits one signal is
// pending, however many commits; a failed transaction signals nothing.
func TestWrittenSignalsOncePerQuietPeriod(t *testing.T) {
	t.Parallel()
	s, _ := openTemp(t)
	pending := func() bool {
		select {
		case <-s.Written():
			return true
		default:
			return false
		}
	}
	pending() // the format marker written at Open
	if pending() {
		t.Fatal("a signal pending with no commit since the last one was taken")
	}
	setKey(t, s, "k/1", "a")
	setKey(t, s, "k/2", "b")
	if !pending() {
		t.Fatal("no signal after two commits")
	}
	if pending() {
		t.Fatal("two signals pending after two commits, want one")
	}
	if err := s.Update(func(txn *Txn) error { _ = txn.Set("k/3", []byte("c")); return ErrNotFound }); !errors.Is(err, ErrNotFound) {
		t.Fatalf("failing transaction: %v", err)
	}
	if pending() {
		t.Fatal("a failed transaction signalled a write")
	}
}
