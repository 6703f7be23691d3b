package pidfile

import (
	"reflect"
	"strings"
	"testing"
	"unicode"
)

// FuzzParse: whatever Parse accepts is a whole record (pid and, when there
// is one, the full identity) that Format writes back to text Parse reads as
// the very same record; and that text is Format's canonical form.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"123\n", "123\nlinux-v1 abc 4026531836 999\n", "123\ndarwin-v1 1764000000 1764000123456789\n", "", "-1", "1\nlinux-v2 x", "99999999999999999999",
		" 7 \n  linux-v1\tb n 0  \n", "7\nlinux-v1 b n 18446744073709551615\n", "7\nlinux-v1 b n +1\n", "+7\n", "7\n\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		rec, err := Parse(data)
		if err != nil {
			return
		}
		if rec.Pid <= 0 {
			t.Fatalf("accepted pid %d from %q", rec.Pid, data)
		}
		text := Format(rec.Pid, rec.Identity)
		again, err := Parse(text)
		if err != nil {
			t.Fatalf("Parse(Format(%+v)) = %q: %v", rec, text, err)
		}
		if !reflect.DeepEqual(again, rec) {
			t.Fatalf("round trip of %q through %q: got %+v (identity %+v), want %+v (identity %+v)", data, text, again, again.Identity, rec, rec.Identity)
		}
		if canon := Format(again.Pid, again.Identity); canon != text {
			t.Fatalf("Format is not stable: %q then %q", text, canon)
		}
	})
}

// FuzzFormat: any record a broker can write (a positive pid; boot id and
// namespace as single words, as Self reads them) is read back whole.
func FuzzFormat(f *testing.F) {
	f.Add(1234, false, false, "", "", uint64(0))
	f.Add(42, true, false, "0a1b2c3d-aaaa-bbbb-cccc-0123456789ab", "4026531836", uint64(987654321))
	f.Add(1, true, false, "b", "n", ^uint64(0))
	f.Add(7, true, true, "1764000000", "", uint64(1764000123456789))
	f.Fuzz(func(t *testing.T, pid int, withID, darwin bool, boot, ns string, ticks uint64) {
		if pid <= 0 {
			return
		}
		rec := Record{Pid: pid}
		if withID {
			switch {
			case darwin && oneWord(boot):
				rec.Identity = &Identity{Scheme: schemeDarwin, Boot: boot, Start: ticks}
			case !darwin && oneWord(boot) && oneWord(ns):
				rec.Identity = &Identity{Scheme: schemeLinux, Boot: boot, PidNS: ns, Start: ticks}
			default:
				return
			}
		}
		text := Format(rec.Pid, rec.Identity)
		got, err := Parse(text)
		if err != nil {
			t.Fatalf("Parse(%q) of %+v: %v", text, rec, err)
		}
		if !reflect.DeepEqual(got, rec) {
			t.Fatalf("Parse(%q) = %+v (identity %+v), want %+v (identity %+v)", text, got, got.Identity, rec, rec.Identity)
		}
	})
}

// oneWord: non-empty, no white space, no NUL (what /proc yields).
func oneWord(s string) bool {
	return s != "" && !strings.ContainsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == 0 })
}
