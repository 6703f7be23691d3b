package pidfile

import "testing"

func FuzzParse(f *testing.F) {
	for _, s := range []string{"123\n", "123\nlinux-v1 abc 4026531836 999\n", "123\ndarwin-v1 1764000000 1764000123456789\n", "", "-1", "1\nlinux-v2 x", "99999999999999999999"} {
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
		again, err := Parse(Format(rec.Pid, rec.Identity))
		if err != nil || again.Pid != rec.Pid {
			t.Fatalf("round trip of %q: %+v, %v", data, again, err)
		}
	})
}
