package render

import (
	"context"
	"log/slog"
)

// LogHandler escapes what a log line quotes (its message and every string,
// error or Stringer value, in groups too) with Line before next writes it:
// a log may quote another machine's refusal or name, and it is read on a
// terminal. slog's text handler quotes only what is not printable, its JSON
// handler leaves C1 controls and bidirectional overrides raw; with this
// rule neither prints one.
func LogHandler(next slog.Handler) slog.Handler { return logHandler{next} }

type logHandler struct{ next slog.Handler }

func (h logHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h logHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, Line(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(escapeAttr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	esc := make([]slog.Attr, len(as))
	for i, a := range as {
		esc[i] = escapeAttr(a)
	}
	return logHandler{h.next.WithAttrs(esc)}
}

func (h logHandler) WithGroup(name string) slog.Handler {
	return logHandler{h.next.WithGroup(Line(name))}
}

func escapeAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(Line(a.Key), Line(v.String()))
	case slog.KindGroup:
		g := v.Group()
		esc := make([]any, len(g))
		for i, m := range g {
			esc[i] = escapeAttr(m)
		}
		return slog.Group(Line(a.Key), esc...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(Line(a.Key), Line(x.Error()))
		case interface{ String() string }:
			return slog.String(Line(a.Key), Line(x.String()))
		}
	}
	return slog.Attr{Key: Line(a.Key), Value: v}
}
