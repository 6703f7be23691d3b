// Package ascii checks and cleans strings against small sets of ASCII
// bytes, what the identifier rules of intercom's names, ids, topics and
// files need. It stands where a regular expression would do the same
// (`^[a-z0-9][a-z0-9_-]{0,63}$`, `[^A-Za-z0-9_-]+`): package regexp, and the
// unicode tables its parser brings, would otherwise be linked into and
// initialised by intercom-hook, a process every tool call of every agent
// starts (internal/hookcmd's TestHookExecutableImports keeps it out).
package ascii

// Set is a set of ASCII bytes (bit c of the set is byte c).
type Set [2]uint64

// Of is the set spec lists, as a regular expression's class does without
// its brackets: single bytes and ranges "a-z"; a '-' first or last stands
// for itself. spec must be ASCII.
func Of(spec string) Set {
	var s Set
	for i := 0; i < len(spec); i++ {
		lo, hi := spec[i], spec[i]
		if i+2 < len(spec) && spec[i+1] == '-' {
			hi = spec[i+2]
			i += 2
		}
		for c := int(lo); c <= int(hi); c++ {
			s[c/64] |= 1 << (c % 64)
		}
	}
	return s
}

// Has reports whether c is in s.
func (s Set) Has(c byte) bool { return c < 128 && s[c/64]&(1<<(c%64)) != 0 }

// All reports whether every byte of str is in s (true for "").
func (s Set) All(str string) bool {
	for i := 0; i < len(str); i++ {
		if !s.Has(str[i]) {
			return false
		}
	}
	return true
}

// Word reports whether str has min to max bytes (max 0: no bound), its
// first in first and the others in rest: `^[first][rest]{min-1,max-1}$`.
func Word(str string, min, max int, first, rest Set) bool {
	return len(str) >= min && len(str) >= 1 && (max == 0 || len(str) <= max) &&
		first.Has(str[0]) && rest.All(str[1:])
}

// ReplaceOthers replaces each run of bytes of str that are not in s with
// repl, as regexp's ReplaceAllString of `[^s]+` does.
func ReplaceOthers(str string, s Set, repl string) string {
	if s.All(str) {
		return str
	}
	out := make([]byte, 0, len(str))
	for i := 0; i < len(str); {
		if s.Has(str[i]) {
			out = append(out, str[i])
			i++
			continue
		}
		out = append(out, repl...)
		for i < len(str) && !s.Has(str[i]) {
			i++
		}
	}
	return string(out)
}
