package ui

import (
	"strings"
	"unicode"

	tea "charm.land/bubbletea/v2"
)

// keystroke is the canonical name of a key press, e.g. "alt+shift+m",
// "ctrl+s", "enter", "a". A legacy terminal sends Alt+Shift+M as ESC M,
// which Bubble Tea already reports as alt+shift+m.
func keystroke(k tea.KeyPressMsg) string {
	return canonicalKey(k.Keystroke())
}

// canonicalKey normalises a key name from config or from a key event:
// lower case, modifiers in Bubble Tea's order (ctrl, alt, shift, meta,
// hyper, super), and an upper-case letter turned into shift+letter.
func canonicalKey(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	parts := strings.Split(s, "+")
	if strings.HasSuffix(s, "++") { // "ctrl++"
		parts = append(parts[:len(parts)-2], "+")
	}
	key := parts[len(parts)-1]
	mods := map[string]bool{}
	for _, p := range parts[:len(parts)-1] {
		p = strings.ToLower(p)
		switch p {
		case "option", "opt":
			p = "alt"
		case "control":
			p = "ctrl"
		case "cmd", "command":
			p = "super"
		}
		mods[p] = true
	}
	if r := []rune(key); len(r) == 1 && unicode.IsUpper(r[0]) {
		key = string(unicode.ToLower(r[0]))
		mods["shift"] = true
	} else {
		key = strings.ToLower(key)
	}
	var b strings.Builder
	for _, m := range []string{"ctrl", "alt", "shift", "meta", "hyper", "super"} {
		if mods[m] {
			b.WriteString(m + "+")
		}
	}
	b.WriteString(key)
	return b.String()
}

// is reports whether k is one of the named keys.
func is(k tea.KeyPressMsg, names ...string) bool {
	ks := keystroke(k)
	for _, n := range names {
		if ks == canonicalKey(n) {
			return true
		}
	}
	return false
}
