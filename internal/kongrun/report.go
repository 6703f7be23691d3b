package kongrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/intercom-dev/intercom/internal/bounded"
	"github.com/intercom-dev/intercom/internal/config"
	"github.com/intercom-dev/intercom/internal/duration"
	"github.com/intercom-dev/intercom/internal/paths"
	"github.com/intercom-dev/intercom/internal/render"
	"github.com/intercom-dev/intercom/internal/schema"
	"github.com/intercom-dev/intercom/internal/spawn"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Exit statuses shared by intercom's CLIs.
const (
	StatusOK          = 0
	StatusFailure     = 1
	StatusUsage       = 2
	StatusInterrupted = 130 // 128 + SIGINT: Ctrl-C or SIGTERM ended the command
	// StatusStoreUnavailable is intercom-broker's status when it stopped
	// because its store could not be written (home deleted, database
	// directory unwritable or read-only, I/O errors).
	StatusStoreUnavailable = 3
)

// Classify maps an error to its exit status and stable error code: 130 when
// the command was interrupted, 2 for bad input (usage, invalid config or
// duration, a UsageError, a request the broker refused as malformed or too
// large), 1 for any other failure.
func Classify(err error) (int, string) {
	var we *wire.Error
	var ue UsageError
	switch {
	case errors.Is(err, context.Canceled):
		return StatusInterrupted, schema.CodeInterrupted
	case errors.Is(err, bounded.ErrTooLarge):
		return StatusUsage, wire.CodeTooLarge
	case errors.As(err, &ue), errors.Is(err, duration.ErrInvalid), errors.Is(err, paths.ErrNoParent):
		return StatusUsage, schema.CodeUsage
	case errors.Is(err, config.ErrInvalid):
		return StatusUsage, schema.CodeConfig
	case errors.As(err, &we):
		if we.Code == wire.CodeBadRequest || we.Code == wire.CodeTooLarge {
			return StatusUsage, we.Code
		}
		return StatusFailure, we.Code
	case errors.Is(err, spawn.ErrSocketMismatch):
		return StatusFailure, schema.CodeMismatch
	case errors.Is(err, spawn.ErrUnhealthy):
		return StatusFailure, schema.CodeUnhealthy
	case errors.Is(err, spawn.ErrNoBroker):
		return StatusFailure, schema.CodeUnreachable
	}
	return StatusFailure, schema.CodeFailed
}

// PrintError reports a failed command: one line "name: message" on stderr,
// or with jsonOut the error envelope (schema.Error) on stdout.
func PrintError(name string, stdout, stderr io.Writer, jsonOut bool, err error, code string) {
	msg := strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", " ")
	if code == schema.CodeInterrupted && !strings.Contains(msg, "interrupted") {
		msg = "interrupted"
	}
	if !jsonOut || stdout == nil {
		fmt.Fprintf(stderr, "%s: %s\n", name, render.OneLine(msg))
		return
	}
	body := schema.ErrorBody{Code: code, Message: msg}
	var we *wire.Error
	if errors.As(err, &we) {
		body.Choices = we.Choices
	}
	_ = PrintJSON(stdout, schema.Error{Error: body})
}

// WantsJSON reports whether args ask for --json output (before a "--").
func WantsJSON(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--json", "--json=true":
			return true
		}
	}
	return false
}
