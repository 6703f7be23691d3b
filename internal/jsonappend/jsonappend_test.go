package jsonappend

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

var strings = []string{
	"", "plain words", `quote " and \ backslash`, "<tag> & amp", "line\nbreak\ttab\rcr\bbs\ffeed",
	"\x00\x01\x1f\x7f", "é ü 日本語 🎉", "\u2028\u2029", "bad \xff utf-8 \xc3", "\xed\xa0\x80 surrogate",
}

func checkString(t *testing.T, s string) {
	t.Helper()
	want, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := String([]byte("x"), s); !bytes.Equal(got, append([]byte("x"), want...)) {
		t.Fatalf("String(%q) = %s, want x%s", s, got, want)
	}
}

func TestStringAsEncodingJSON(t *testing.T) {
	for _, s := range strings {
		checkString(t, s)
	}
}

func FuzzString(f *testing.F) {
	for _, s := range strings {
		f.Add(s)
	}
	f.Fuzz(checkString)
}

func checkTime(t *testing.T, tm time.Time) {
	t.Helper()
	want, err := tm.MarshalJSON()
	if err != nil {
		want = []byte(Zero)
	}
	if got := Time([]byte("x"), tm); !bytes.Equal(got, append([]byte("x"), want...)) {
		t.Fatalf("Time(%v) = %s, want x%s", tm, got, want)
	}
}

func TestTimeAsMarshalJSON(t *testing.T) {
	for _, tm := range []time.Time{
		{}, time.Date(2026, 12, 3, 7, 0, 0, 0, time.UTC), time.Date(2026, 12, 3, 7, 0, 0, 123456789, time.UTC),
		time.Date(2026, 12, 3, 7, 0, 0, 120000000, time.FixedZone("x", 5*3600+1800)),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("far", 25*3600)), time.Now(),
	} {
		checkTime(t, tm)
	}
}

func FuzzTime(f *testing.F) {
	f.Add(int64(0), int64(0), 0)
	f.Add(int64(1_796_000_000), int64(5), 3600)
	f.Fuzz(func(t *testing.T, sec, nsec int64, offset int) {
		checkTime(t, time.Unix(sec, nsec).In(time.FixedZone("z", offset%(48*3600))))
	})
}
