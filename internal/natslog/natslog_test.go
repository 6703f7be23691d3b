package natslog

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestLoggerLevels(t *testing.T) {
	var buf bytes.Buffer
	l := Logger{L: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})),
		Expected: []string{"Plaintext passwords"}, ErrorLevel: slog.LevelWarn, ErrorPrefix: "link refused: "}
	l.Noticef("notice %d", 1)
	l.Debugf("debug")
	l.Tracef("trace")
	l.Warnf("Plaintext passwords detected")
	l.Warnf("slow consumer %s ", "c1")
	l.Errorf("TLS handshake error: %v", "bad certificate")
	got := buf.String()
	for _, absent := range []string{"notice 1", "debug", "trace", "Plaintext"} {
		if strings.Contains(got, absent) {
			t.Errorf("logged %q at info level:\n%s", absent, got)
		}
	}
	for _, want := range []string{`level=WARN msg="slow consumer c1"`, `level=WARN msg="link refused: TLS handshake error: bad certificate"`} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %s in:\n%s", want, got)
		}
	}

	buf.Reset()
	Logger{L: slog.New(slog.NewTextHandler(&buf, nil))}.Fatalf("cannot listen")
	if !strings.Contains(buf.String(), `level=ERROR msg="cannot listen"`) {
		t.Errorf("fatal without ErrorLevel: %s", buf.String())
	}
}
