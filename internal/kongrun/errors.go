package kongrun

import (
	"errors"
	"fmt"
	"io"

	"github.com/intercom-dev/intercom/internal/schema"
)

// UsageError marks an error as bad usage: exit 2, code "usage".
type UsageError struct{ Err error }

func (u UsageError) Error() string { return u.Err.Error() }
func (u UsageError) Unwrap() error { return u.Err }

// Usage marks err as a usage error (nil stays nil).
func Usage(err error) error {
	if err == nil {
		return nil
	}
	return UsageError{err}
}

// Usagef is a usage error with a formatted message.
func Usagef(format string, a ...any) error { return UsageError{fmt.Errorf(format, a...)} }

// ExitError ends a command with an explicit status. Msg, when not empty,
// is reported as a failure (code "failed"); it is empty when the command
// already printed its outcome.
type ExitError struct {
	Code int
	Msg  string
}

func (e ExitError) Error() string { return e.Msg }

// Exit is an ExitError: status code, reported as msg (nothing when empty).
func Exit(code int, msg string) error { return ExitError{Code: code, Msg: msg} }

// Report prints err the way every intercom binary reports a failed
// command (PrintError: one line on stderr, or with jsonOut the error
// envelope on stdout) and returns its exit status: an ExitError's own, else
// the one Classify gives. A nil err is status 0 and prints nothing.
func Report(name string, stdout, stderr io.Writer, jsonOut bool, err error) int {
	if err == nil {
		return StatusOK
	}
	var ex ExitError
	if errors.As(err, &ex) {
		if ex.Msg != "" {
			PrintError(name, stdout, stderr, jsonOut, errors.New(ex.Msg), schema.CodeFailed)
		}
		return ex.Code
	}
	status, code := Classify(err)
	PrintError(name, stdout, stderr, jsonOut, err, code)
	return status
}
