package render

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// The escaping rule. What a renderer prints of a message or a session may
// come from another machine (names, paths, ids, texts relayed by the
// bridge), so nothing it prints may drive the terminal or forge layout:
// control characters (C0, DEL, C1 such as the 8-bit CSI), bidirectional
// controls and line or paragraph separators are shown as escapes (\r, \n,
// \x1b, \u202e). Line is for one-line fields; Text keeps the line breaks
// and tabs of a message body; Body picks the rule for a message's sender.
// Renderers and every command that prints what the broker answered (its
// error lines included: kongrun.PrintError) call them; nothing else prints
// remote data. Logs are escaped by slog's text and JSON handlers.

// Line makes s safe as (part of) one line of output.
func Line(s string) string { return escape(s, false) }

// OneLine is an error message or a note as one safe line: its line breaks
// become spaces, every other control is escaped (it may quote another
// machine's refusal).
func OneLine(s string) string { return Line(strings.ReplaceAll(strings.TrimSpace(s), "\n", " ")) }

// Text makes a message body safe: its newlines and tabs are kept, every
// other control is escaped.
func Text(s string) string { return escape(s, true) }

func needsEscape(r rune, body bool) bool {
	if body && (r == '\n' || r == '\t') {
		return false
	}
	return unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Bidi_Control, r) ||
		unicode.In(r, unicode.Zl, unicode.Zp)
}

func escape(s string, body bool) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return needsEscape(r, body) }) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for _, r := range s {
		if !needsEscape(r, body) {
			b.WriteRune(r)
			continue
		}
		switch r {
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x80 {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		}
	}
	return b.String()
}

// headerLike reports whether a body line would read as the header of
// another message.
func headerLike(line string) bool {
	l := strings.TrimLeft(line, " \t>")
	return strings.HasPrefix(l, "**From ") || strings.HasPrefix(l, "**Topic ")
}

// Body makes the text (a body, an attachment) of a message from sender
// safe: Text, and for a sender on another machine remoteBody.
func Body(sender wire.Peer, s string) string {
	if _, _, remote := wire.SplitRemote(sender.ID); remote {
		return remoteBody(s)
	}
	return Text(s)
}

// remoteBody escapes a body from another machine: Text, and each line that
// would pass for a message header is marked with a leading backslash.
func remoteBody(s string) string {
	s = Text(s)
	if !strings.Contains(s, "**") {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if headerLike(l) {
			lines[i] = `\` + l
		}
	}
	return strings.Join(lines, "\n")
}
