// Package brokerlog is the broker's log: a size-capped file with one rotated
// backup, and a slog handler that folds repeated warnings and errors into
// one line with a count, so that a fault repeating every second cannot grow
// the log without bound.
package brokerlog

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"gopkg.in/natefinch/lumberjack.v2"
)

// File opens path for appending, rotated once it reaches maxMiB (at least
// 1): the full file is renamed with a timestamp (broker-<time>.log) and only
// the newest such backup is kept. New files get mode 0600.
func File(path string, maxMiB int) io.WriteCloser {
	return &lumberjack.Logger{Filename: path, MaxSize: max(maxMiB, 1), MaxBackups: 1}
}

// FoldWindow is how long repeats of a warning or error are counted instead
// of written.
const FoldWindow = time.Minute

// maxFolded bounds the records remembered for folding.
const maxFolded = 1024

// Fold returns a handler that passes records to next, except that a warning
// or error identical to one written less than window ago (same level,
// message and attributes, numbers aside: a retry's file number or a pid does
// not make it new) is only counted. The first repeat after the window, or
// Flush, writes the latest repeat with "repeated=N", N being how many were
// held back.
func Fold(next slog.Handler, window time.Duration) *FoldHandler {
	return &FoldHandler{next: next, st: &foldState{window: window, now: time.Now, seen: map[string]*folded{}}}
}

// FoldHandler is the handler Fold returns.
type FoldHandler struct {
	next   slog.Handler
	st     *foldState
	prefix string // attributes and groups added by WithAttrs/WithGroup, rendered
}

type foldState struct {
	mu     sync.Mutex
	window time.Duration
	now    func() time.Time
	seen   map[string]*folded
}

// folded is one kind of record: when it was last written, and the repeats
// held back since.
type folded struct {
	written time.Time
	held    int
	last    slog.Record
	next    slog.Handler
}

// Enabled implements slog.Handler.
func (h *FoldHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

// WithAttrs implements slog.Handler.
func (h *FoldHandler) WithAttrs(as []slog.Attr) slog.Handler {
	var b strings.Builder
	b.WriteString(h.prefix)
	for _, a := range as {
		b.WriteString(" " + a.String())
	}
	return &FoldHandler{next: h.next.WithAttrs(as), st: h.st, prefix: b.String()}
}

// WithGroup implements slog.Handler.
func (h *FoldHandler) WithGroup(name string) slog.Handler {
	return &FoldHandler{next: h.next.WithGroup(name), st: h.st, prefix: h.prefix + " " + name + "{"}
}

// Handle implements slog.Handler.
func (h *FoldHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return h.next.Handle(ctx, r)
	}
	key := h.key(r)
	st := h.st
	st.mu.Lock()
	now := st.now()
	f := st.seen[key]
	if f != nil && now.Sub(f.written) < st.window {
		f.held++
		f.last = r.Clone()
		st.mu.Unlock()
		return nil
	}
	held := 0
	if f != nil {
		held = f.held
	}
	if f == nil && len(st.seen) >= maxFolded {
		st.flushLocked(ctx, true)
	}
	st.seen[key] = &folded{written: now, next: h.next}
	st.mu.Unlock()
	if held > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int("repeated", held))
	}
	return h.next.Handle(ctx, r)
}

// Flush writes the latest held-back repeat of every folded record, with its
// count; call it before exiting.
func (h *FoldHandler) Flush() {
	h.st.mu.Lock()
	defer h.st.mu.Unlock()
	h.st.flushLocked(context.Background(), false)
}

// flushLocked writes held-back repeats; with forget it also drops every
// remembered record.
func (st *foldState) flushLocked(ctx context.Context, forget bool) {
	for key, f := range st.seen {
		if f.held > 0 {
			r := f.last
			r.AddAttrs(slog.Int("repeated", f.held))
			_ = f.next.Handle(ctx, r)
			f.held = 0
		}
		if forget {
			delete(st.seen, key)
		}
	}
}

// key identifies a record for folding: level, message and attributes with
// every run of digits replaced by '#'.
func (h *FoldHandler) key(r slog.Record) string {
	var b strings.Builder
	b.WriteString(r.Level.String())
	b.WriteString(h.prefix)
	b.WriteString(" " + r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	return maskDigits(b.String())
}

func maskDigits(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	inDigits := false
	for _, c := range s {
		if c >= '0' && c <= '9' {
			if !inDigits {
				b.WriteByte('#')
			}
			inDigits = true
			continue
		}
		inDigits = false
		b.WriteRune(c)
	}
	return b.String()
}
