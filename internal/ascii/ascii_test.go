package ascii

import (
	"regexp"
	"testing"
)

// Each helper agrees with the regular expression it stands for, on
// strings made of ASCII, multi-byte UTF-8 and invalid bytes.
func TestAgreesWithRegexp(t *testing.T) {
	inputs := []string{"", "a", "A", "0", "-", "_", "ab-c_d", "-ab", "a b", "a//b", "x.y:z/w", "plänner",
		"\xff\xfe", "a\xffb", "日本語", "abc\n", "ABCdef123", "a--b", "  lead", "trail  ", "a*b>c", "ab.json", "12-34.json"}
	for n := 60; n <= 70; n++ {
		b := make([]byte, n)
		for i := range b {
			b[i] = 'a'
		}
		inputs = append(inputs, string(b))
	}
	lowerID, lower := Of("a-z0-9"), Of("a-z0-9_-")
	word := regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	topicFirst, topicRest := Of("A-Za-z0-9"), Of("A-Za-z0-9._:/-")
	topic := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/-]*$`)
	unsafe := regexp.MustCompile(`[^A-Za-z0-9_-]+`)
	safe := Of("A-Za-z0-9_-")
	for _, s := range inputs {
		if got, want := Word(s, 1, 64, lowerID, lower), word.MatchString(s); got != want {
			t.Errorf("Word(%q, 1, 64) = %v, regexp %v", s, got, want)
		}
		if got, want := Word(s, 1, 0, topicFirst, topicRest), topic.MatchString(s); got != want {
			t.Errorf("Word(%q, 1, 0) = %v, regexp %v", s, got, want)
		}
		if got, want := ReplaceOthers(s, safe, "-"), unsafe.ReplaceAllString(s, "-"); got != want {
			t.Errorf("ReplaceOthers(%q) = %q, regexp %q", s, got, want)
		}
	}
}

// Of reads ranges, single bytes and a '-' at either end.
func TestOf(t *testing.T) {
	s := Of("-a-cx.")
	for c := 0; c < 256; c++ {
		want := c == '-' || c == 'a' || c == 'b' || c == 'c' || c == 'x' || c == '.'
		if got := s.Has(byte(c)); got != want {
			t.Errorf("Has(%q) = %v, want %v", rune(c), got, want)
		}
	}
	if !Of("a-").Has('-') || Of("a-").Has('b') {
		t.Error(`Of("a-") is not {a, -}`)
	}
}
