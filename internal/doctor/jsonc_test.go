package doctor

import (
	"encoding/json"
	"testing"
)

func TestStripJSONC(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // "" when the result must not parse
	}{
		{`{"a": 1, // one` + "\n" + `"b": [1, 2,],}`, `{"a":1,"b":[1,2]}`},
		{`/* head */ {"url": "http://x//y", "s": "a /* b */ \" ,}"}`, `{"s":"a /* b */ \" ,}","url":"http://x//y"}`},
		{`{,}`, ""},
		{`[1,,]`, ""},
		{`{"a": 1 /* unterminated`, ""},
	} {
		var v any
		err := json.Unmarshal(stripJSONC([]byte(tc.in)), &v)
		if tc.want == "" {
			if err == nil {
				t.Errorf("%q parsed as %v, want an error", tc.in, v)
			}
			continue
		}
		got, _ := json.Marshal(v)
		if err != nil || string(got) != tc.want {
			t.Errorf("%q: %s (%v), want %s", tc.in, got, err, tc.want)
		}
	}
}
