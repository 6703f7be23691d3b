// Package jsonappend writes JSON strings and times into a byte slice
// exactly as encoding/json's Marshal writes them, without reflection and
// without allocating: the pieces of the documents the broker writes at
// every send (the stored and pushed message, its trace), where encoding a
// struct by reflection was several per cent of the broker's CPU.
package jsonappend

import (
	"time"
	"unicode/utf8"
)

const hex = "0123456789abcdef"

// plain marks the bytes encoding/json writes as they are in a string
// (with HTML escaping, its default): printable ASCII and DEL, except the
// quote, the backslash, <, > and &.
var plain = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// String appends s as a JSON string, byte for byte as json.Marshal writes
// it: the short escapes, \u00XX for other control bytes and for <, > and
// &, \u2028 and \u2029 escaped, invalid UTF-8 as \ufffd.
func String(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if plain[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// Zero is what Time writes for a time json.Marshal refuses (a year
// outside 0–9999, an offset of a day or more): the zero time.
const Zero = `"0001-01-01T00:00:00Z"`

// Time appends t as time.Time's MarshalJSON writes it (RFC 3339 with the
// nanoseconds that are not zero), or Zero for a time it refuses.
func Time(dst []byte, t time.Time) []byte {
	n := len(dst)
	dst = append(dst, '"')
	out, err := t.AppendText(dst)
	if err != nil {
		return append(dst[:n], Zero...)
	}
	return append(out, '"')
}
