// Package duration is the one rule for every duration intercom accepts, on
// a command line (Go syntax: 500ms, 30s, 5m, 1h30m) or in config.json (a
// whole number of milliseconds): at least 1ms and at most 7 days. Zero is
// accepted only where it has a documented meaning (say "run forever" or
// "do not wait"); a negative duration never is.
package duration

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Bounds of every duration.
const (
	Min = time.Millisecond
	Max = 7 * 24 * time.Hour
)

// ErrInvalid is wrapped by every error of this package.
var ErrInvalid = errors.New("invalid duration")

type invalid struct{ msg string }

func (e invalid) Error() string { return e.msg }
func (e invalid) Unwrap() error { return ErrInvalid }

const want = "want 1ms to 7 days (168h)"

// Check applies the rule to d, written shown by the user. zeroMeans is the
// documented meaning of 0 ("" when 0 is refused). The error describes the
// value; callers prefix what it is (the flag or key).
func Check(shown string, d time.Duration, zeroMeans string) error {
	return check(func() string { return shown }, d, zeroMeans)
}

// check is Check with the value shown only when there is an error to
// write (formatting a float costs a hook process more than its config).
func check(shown func() string, d time.Duration, zeroMeans string) error {
	switch {
	case d < 0:
		return invalid{fmt.Sprintf("%s is negative; %s", shown(), want)}
	case d == 0 && zeroMeans == "":
		return invalid{fmt.Sprintf("0 is not allowed here; %s", want)}
	case d > 0 && d < Min:
		return invalid{fmt.Sprintf("%s is shorter than 1ms; %s", shown(), want)}
	case d > Max:
		return invalid{fmt.Sprintf("%s is longer than 7 days; %s", shown(), want)}
	}
	return nil
}

// Parse reads a command-line duration and applies the rule.
func Parse(s, zeroMeans string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	d, err := time.ParseDuration(s)
	if err != nil {
		if s != "0" {
			return 0, invalid{fmt.Sprintf("%q is not a duration: want a number with a unit, e.g. 500ms, 30s, 5m, 2h", s)}
		}
		d = 0
	}
	if err := Check(s, d, zeroMeans); err != nil {
		return 0, err
	}
	return d, nil
}

// ParseOffset reads a signed offset from now (say a certificate's start
// of validity, -48h to backdate it): its size follows the rule, 0 is now.
func ParseOffset(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, "-"); ok {
		d, err := Parse(rest, "now")
		return -d, err
	}
	return Parse(s, "now")
}

// Millis applies the rule to a config value in milliseconds.
func Millis(ms float64, zeroMeans string) (time.Duration, error) {
	shown := func() string { return fmt.Sprintf("%vms", ms) }
	switch {
	case ms != float64(int64(ms)):
		return 0, invalid{fmt.Sprintf("%s is not a whole number of milliseconds", shown())}
	case ms > float64(Max/time.Millisecond):
		return 0, invalid{fmt.Sprintf("%s is longer than 7 days; %s", shown(), want)}
	case ms < 0:
		return 0, invalid{fmt.Sprintf("%s is negative; %s", shown(), want)}
	}
	d := time.Duration(ms) * time.Millisecond
	if err := check(shown, d, zeroMeans); err != nil {
		return 0, err
	}
	return d, nil
}
