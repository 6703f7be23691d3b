package render

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// Logs are read on a terminal: neither slog handler, behind LogHandler,
// writes a raw control, whatever a log line quotes (the JSON handler alone
// leaves C1 controls and bidirectional overrides raw).
func TestLogHandlerEscapes(t *testing.T) {
	for name, mk := range map[string]func(*bytes.Buffer) slog.Handler{
		"text": func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
		"json": func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
	} {
		var b bytes.Buffer
		log := slog.New(LogHandler(mk(&b))).With("peer", hostile).WithGroup("g\u202e")
		log.Warn("remote refused message: "+hostile, "err", errors.New(hostile), "to", hostile,
			slog.Group("sub", "x", hostile), "n", 3)
		out := strings.TrimSuffix(b.String(), "\n")
		if raw := rawControls(out, false); len(raw) > 0 {
			t.Errorf("%s handler writes raw %q:\n%s", name, raw, out)
		}
		if !strings.Contains(out, "evil") || !strings.Contains(out, "3") {
			t.Errorf("%s handler lost the values:\n%s", name, out)
		}
	}
}
