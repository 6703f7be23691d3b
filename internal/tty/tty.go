// Package tty says whether a person is reading or typing at the other end of
// a stream, and how to write for them: terminal detection (golang.org/x/term),
// the colour rule (a terminal, and NO_COLOR unset or empty, as no-color.org
// asks) and the terminal's width. Output that is not for a person (a pipe, a
// file, --json) gets none of the decoration.
package tty

import (
	"os"

	"golang.org/x/term"
)

// Is reports whether v is an *os.File open on a terminal.
func Is(v any) bool {
	f, ok := v.(*os.File)
	return ok && f != nil && term.IsTerminal(int(f.Fd()))
}

// Colour reports whether output to w may use colour and other styling.
func Colour(w any) bool {
	return Is(w) && os.Getenv("NO_COLOR") == ""
}

// Width is the terminal's width in columns, or 0 when w is not a terminal
// or its size is unknown.
func Width(w any) int {
	f, ok := w.(*os.File)
	if !ok || f == nil {
		return 0
	}
	cols, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return cols
}
