package broker

import (
	"fmt"
	"log/slog"
	"strings"
)

// natsLogger routes the embedded NATS server's logs into slog.
type natsLogger struct{ l *slog.Logger }

func (n natsLogger) f(format string, v []any) string {
	return strings.TrimSpace(fmt.Sprintf(format, v...))
}
func (n natsLogger) Noticef(format string, v ...any) { n.l.Debug(n.f(format, v)) }
func (n natsLogger) Warnf(format string, v ...any) {
	msg := n.f(format, v)
	if strings.Contains(msg, "Plaintext passwords") {
		return // the broker's own per-run random credentials, never on disk
	}
	n.l.Warn(msg)
}
func (n natsLogger) Fatalf(format string, v ...any) { n.l.Error(n.f(format, v)) }
func (n natsLogger) Errorf(format string, v ...any) { n.l.Error(n.f(format, v)) }
func (n natsLogger) Debugf(format string, v ...any) { n.l.Debug(n.f(format, v)) }
func (n natsLogger) Tracef(format string, v ...any) {}
