package duration

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in, zero string
		want     time.Duration
		err      string // substring; "" = accepted
	}{
		{"500ms", "", 500 * time.Millisecond, ""},
		{"2m", "", 2 * time.Minute, ""},
		{"168h", "", Max, ""},
		{"0", "run forever", 0, ""},
		{"0s", "do not wait", 0, ""},
		{"0", "", 0, "0 is not allowed"},
		{"-1s", "run forever", 0, "-1s is negative"},
		{"1000h", "", 0, "1000h is longer than 7 days"},
		{"1ns", "", 0, "shorter than 1ms"},
		{"5", "", 0, `"5" is not a duration`},
		{"abc", "", 0, `"abc" is not a duration`},
		{"", "", 0, "is not a duration"},
	} {
		got, err := Parse(tc.in, tc.zero)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("Parse(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrInvalid)):
			t.Errorf("Parse(%q) error %v; want one containing %q", tc.in, err, tc.err)
		}
	}
}

func TestMillis(t *testing.T) {
	for _, tc := range []struct {
		ms   float64
		zero string
		ok   bool
	}{
		{120000, "", true}, {1, "", true}, {0, "never", true}, {0, "", false},
		{-1, "never", false}, {1.5, "", false}, {1e20, "", false}, {604800000, "", true}, {604800001, "", false},
	} {
		_, err := Millis(tc.ms, tc.zero)
		if (err == nil) != tc.ok {
			t.Errorf("Millis(%v, %q) error %v; want ok %t", tc.ms, tc.zero, err, tc.ok)
		}
	}
}

func TestParseOffset(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{"-48h", -48 * time.Hour, false}, {"2h", 2 * time.Hour, false}, {"0", 0, false},
		{"-200h", 0, true}, {"--1h", 0, true}, {"x", 0, true},
	} {
		got, err := ParseOffset(tc.in)
		if (err != nil) != tc.bad || (!tc.bad && got != tc.want) {
			t.Errorf("ParseOffset(%q) = %v, %v; want %v (error: %v)", tc.in, got, err, tc.want, tc.bad)
		}
	}
}
