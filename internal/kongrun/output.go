package kongrun

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"

	"github.com/intercom-dev/intercom/internal/tty"
)

// Output holds a one-shot command's standard output and writes it in one
// write when the command ends (Flush). A command that printed line by line
// could be killed half-way by SIGPIPE when its reader stops early: in
// `intercom topics T | grep -q "tab-4: released"` under `set -o pipefail`,
// grep exits at the matching line and the next line's write ends intercom
// with status 141, so the pipeline fails although the state was right. One
// write of output the pipe can hold completes before the reader has read
// anything, so it cannot meet a closed pipe. Commands that stream (attach, mcp, ui), or that
// acknowledge what they printed once it is written (hook, wait, inbox), do
// not use it.
type Output struct {
	mu  sync.Mutex
	w   io.Writer
	buf bytes.Buffer
}

// NewOutput returns an Output that writes to w on Flush.
func NewOutput(w io.Writer) *Output { return &Output{w: w} }

// Write keeps p for Flush.
func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

// Flush writes what was kept in one write and empties it.
func (o *Output) Flush() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.buf.Len() == 0 {
		return nil
	}
	_, err := o.w.Write(o.buf.Bytes())
	o.buf.Reset()
	return err
}

// OneWrite returns what a one-shot command writes its output to, and the
// flush to run when it ends: an Output over w, or w itself when w is a
// terminal (a person reads as it comes, a terminal never closes early, and
// the commands that style their output for a terminal must still see it).
func OneWrite(w io.Writer) (io.Writer, func() error) {
	if tty.Is(w) {
		return w, func() error { return nil }
	}
	o := NewOutput(w)
	return o, o.Flush
}

// PrintJSON writes v to w as one JSON line, with <, > and & as they are:
// the --json output of every command of the four binaries.
func PrintJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
