package wire

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"time"
	"unicode/utf8"
)

// scanner reads the small flat JSON objects a client decodes per message (a
// pushed Message, a lean send reply) in one pass over the bytes, with no
// tree and one allocation per string. Anything outside what encoding/json
// reads the same way (an escaped key, a UTF-16 surrogate escape, invalid
// UTF-8, a number with a fraction, a value of an unexpected type) makes it
// report false, and the caller leaves the input to encoding/json.
type scanner struct {
	data []byte
	i    int
	bad  bool // a key() loop met bad input
}

func (s *scanner) ws() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// next skips white space and consumes c if it comes next.
func (s *scanner) next(c byte) bool {
	s.ws()
	if s.i < len(s.data) && s.data[s.i] == c {
		s.i++
		return true
	}
	return false
}

// end reports whether only white space is left.
func (s *scanner) end() bool {
	s.ws()
	return s.i == len(s.data)
}

// An object is read as
//
//	if !s.next('{') { ... }
//	for n := 0; ; {
//		k, more := s.key(&n)
//		if !more { break }
//		if !readValueOf(k) { ... }
//	}
//	if s.bad { ... }
//
// (a loop written out in each reader, not one generic reader taking a
// field function: that moved the decoded value and the scanner to the
// heap and called each field indirectly, 3.3 → 3.9 µs per received
// message in the bench).

// key returns the next key of an object, s then at its value; false at the
// object's end or at bad input (which sets bad). n counts the keys read.
func (s *scanner) key(n *int) ([]byte, bool) {
	if s.next('}') {
		return nil, false
	}
	if *n > 0 && !s.next(',') { // a ',' is then followed by a key: no trailing comma
		s.bad = true
		return nil, false
	}
	*n++
	k, ok := s.rawKey()
	if !ok || !s.next(':') {
		s.bad = true
		return nil, false
	}
	s.ws()
	return k, true
}

// rawKey reads a key without escapes (its bytes in data).
func (s *scanner) rawKey() ([]byte, bool) {
	if !s.next('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.data) && keyByte[s.data[s.i]] {
		s.i++
	}
	if s.i == len(s.data) || s.data[s.i] != '"' { // an escape, a control byte, or the end
		return nil, false
	}
	s.i++
	return s.data[start : s.i-1], true
}

// keyByte marks the bytes a key may hold as they are (not '"', '\\' or a
// control byte).
var keyByte = func() (t [256]bool) {
	for c := 0x20; c < 0x100; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// null consumes a null if one comes next.
func (s *scanner) null() bool {
	if len(s.data)-s.i >= 4 && string(s.data[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// str reads a string value into dst (null leaves dst as it is).
func (s *scanner) str(dst *string) bool { return s.strAs(dst, "") }

// strAs is str that takes same, with no copy, when the value equals it
// (the sender of a batch's previous message, say).
func (s *scanner) strAs(dst *string, same string) bool {
	if s.null() {
		return true
	}
	if s.i >= len(s.data) || s.data[s.i] != '"' {
		return false
	}
	s.i++
	start := s.i
	end := bytes.IndexByte(s.data[start:], '"')
	if end < 0 {
		return false
	}
	raw := s.data[start : start+end]
	if bytes.IndexByte(raw, '\\') >= 0 {
		return s.escaped(start, dst)
	}
	if !plainASCII(raw) {
		for _, c := range raw {
			if c < 0x20 {
				return false
			}
		}
		if !utf8.Valid(raw) {
			return false // encoding/json replaces it with U+FFFD
		}
	}
	s.i = start + end + 1
	if string(raw) == same {
		*dst = same
	} else {
		*dst = string(raw)
	}
	return true
}

// plainASCII reports whether b holds only bytes 0x20–0x7f, eight at a
// time: a byte under 0x20 sets its high bit in w-0x20…20 (a borrow only
// comes from such a byte, which is caught anyway), one over 0x7f has it.
func plainASCII(b []byte) bool {
	for ; len(b) >= 8; b = b[8:] {
		w := binary.LittleEndian.Uint64(b)
		if (w|(w-0x2020202020202020))&0x8080808080808080 != 0 {
			return false
		}
	}
	for _, c := range b {
		if c < 0x20 || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// escaped finishes a string holding escapes, begun at start.
func (s *scanner) escaped(start int, dst *string) bool {
	out := append(make([]byte, 0, s.i-start+16), s.data[start:s.i]...)
	for s.i < len(s.data) {
		c := s.data[s.i]
		switch {
		case c == '"':
			s.i++
			if !utf8.Valid(out) {
				return false
			}
			*dst = string(out)
			return true
		case c < 0x20:
			return false
		case c != '\\':
			out = append(out, c)
			s.i++
			continue
		}
		if s.i+1 >= len(s.data) {
			return false
		}
		e := s.data[s.i+1]
		s.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			if s.i+4 > len(s.data) {
				return false
			}
			r, err := strconv.ParseUint(string(s.data[s.i:s.i+4]), 16, 32)
			if err != nil || (r >= 0xd800 && r <= 0xdfff) { // a surrogate: encoding/json's rules
				return false
			}
			out = utf8.AppendRune(out, rune(r))
			s.i += 4
		default:
			return false
		}
	}
	return false
}

// boolean reads true or false into dst (null leaves dst as it is).
func (s *scanner) boolean(dst *bool) bool {
	rest := s.data[s.i:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		*dst = true
		s.i += 4
	case len(rest) >= 5 && string(rest[:5]) == "false":
		*dst = false
		s.i += 5
	default:
		return s.null()
	}
	return true
}

// uint reads a plain unsigned integer into dst (null leaves dst as it is).
func (s *scanner) uint(dst *uint64) bool {
	if s.null() {
		return true
	}
	start := s.i
	for s.i < len(s.data) && s.data[s.i] >= '0' && s.data[s.i] <= '9' {
		s.i++
	}
	digits := s.data[start:s.i]
	if len(digits) == 0 || (len(digits) > 1 && digits[0] == '0') || s.i < len(s.data) && (s.data[s.i] == '.' || s.data[s.i] == 'e' || s.data[s.i] == 'E') {
		return false
	}
	n, err := strconv.ParseUint(string(digits), 10, 64)
	*dst = n
	return err == nil
}

// moment reads a time as time.Time's UnmarshalJSON does (null leaves dst
// as it is); a time holding an escape is left to encoding/json.
func (s *scanner) moment(dst *time.Time) bool {
	if s.null() {
		return true
	}
	if s.i >= len(s.data) || s.data[s.i] != '"' {
		return false
	}
	start := s.i + 1
	for s.i = start; s.i < len(s.data); s.i++ {
		switch s.data[s.i] {
		case '"':
			s.i++
			if t, ok := utcMoment(s.data[start : s.i-1]); ok {
				*dst = t
				return true
			}
			return dst.UnmarshalText(s.data[start:s.i-1]) == nil
		case '\\':
			return false
		}
	}
	return false
}

// utcMoment reads the times a broker writes, 2006-01-02T15:04:05Z with 0–9
// fraction digits, as time.Time's UnmarshalText does; false for any other
// form, which is left to it.
func utcMoment(b []byte) (time.Time, bool) {
	if len(b) < 20 || len(b) > 30 || b[len(b)-1] != 'Z' || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' {
		return time.Time{}, false
	}
	num := func(from, to int) int {
		n := 0
		for _, c := range b[from:to] {
			if c < '0' || c > '9' {
				return -1
			}
			n = n*10 + int(c-'0')
		}
		return n
	}
	year, month, day, hour, minute, sec := num(0, 4), num(5, 7), num(8, 10), num(11, 13), num(14, 16), num(17, 19)
	nsec := 0
	switch frac := b[19 : len(b)-1]; {
	case len(frac) == 0:
	case len(frac) >= 2 && frac[0] == '.':
		if nsec = num(20, len(b)-1); nsec < 0 {
			return time.Time{}, false
		}
		for range 10 - len(frac) {
			nsec *= 10
		}
	default:
		return time.Time{}, false
	}
	if year < 0 || month < 1 || month > 12 || day < 1 || hour < 0 || hour > 23 || minute < 0 || minute > 59 || sec < 0 || sec > 59 {
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC)
	if t.Day() != day { // past the month's last day, which Date would carry over
		return time.Time{}, false
	}
	return t, true
}
