// Package natslog routes an embedded nats-server's log into log/slog: the
// broker's in-process server and the bridge's link server log through it.
package natslog

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// Logger is a nats-server logger (server.Logger) writing to L. The server's
// notices and debug lines go to L at debug level, its warnings at warn level
// and its errors at ErrorLevel, each as one trimmed message. Traces are
// dropped.
type Logger struct {
	L *slog.Logger
	// Expected lists substrings of warnings that are expected where this
	// server runs (the broker's own random credentials, the TLS-first
	// handshake the bridge's joiners always make): they are logged at
	// debug level.
	Expected []string
	// ErrorLevel is the level of the server's errors (default error).
	ErrorLevel slog.Level
	// ErrorPrefix, when set, starts each error message ("link refused: ").
	ErrorPrefix string
}

func text(format string, v []any) string { return strings.TrimSpace(fmt.Sprintf(format, v...)) }

// Noticef logs a notice at debug level.
func (n Logger) Noticef(format string, v ...any) { n.L.Debug(text(format, v)) }

// Debugf logs a debug line.
func (n Logger) Debugf(format string, v ...any) { n.L.Debug(text(format, v)) }

// Tracef drops the server's protocol traces.
func (n Logger) Tracef(string, ...any) {}

// Warnf logs a warning, at debug level when it is expected.
func (n Logger) Warnf(format string, v ...any) {
	msg := text(format, v)
	for _, e := range n.Expected {
		if strings.Contains(msg, e) {
			n.L.Debug(msg)
			return
		}
	}
	n.L.Warn(msg)
}

// Errorf logs an error at ErrorLevel.
func (n Logger) Errorf(format string, v ...any) { n.error(text(format, v)) }

// Fatalf logs a fatal error at ErrorLevel (the server stops on its own).
func (n Logger) Fatalf(format string, v ...any) { n.error(text(format, v)) }

func (n Logger) error(msg string) {
	level := slog.LevelError
	if n.ErrorLevel != 0 {
		level = n.ErrorLevel
	}
	n.L.Log(context.Background(), level, n.ErrorPrefix+msg)
}
