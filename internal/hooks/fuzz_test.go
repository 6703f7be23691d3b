package hooks

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzParse: an accepted hook input has a session id and re-encodes to JSON
// that parses to the same input.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"session_id":"abc","hook_event_name":"Stop","stop_hook_active":true}`, `{}`, `null`, `{"session_id":7}`, ``,
		`{"session_id":"0a1b2c3d-aaaa-bbbb-cccc-0123456789ab","cwd":"/w","hook_event_name":"PostToolUse","tool_name":"Bash"}`,
		`{"session_id":"a b/c@d\u0000é","source":"resume"}`, `{"session_id":"` + strings.Repeat("x", 100) + `"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := Parse(strings.NewReader(string(data)))
		if err != nil {
			return
		}
		if in.SessionID == "" {
			t.Fatalf("accepted %q without a session_id", data)
		}
		text, err := json.Marshal(in)
		if err != nil {
			t.Fatalf("marshal %+v: %v", in, err)
		}
		if again, err := Parse(strings.NewReader(string(text))); err != nil || again != in {
			t.Fatalf("round trip of %q through %s: %+v, %v", data, text, again, err)
		}
	})
}

func TestParseRejections(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "empty"},
		{"not json", "not JSON"},
		{`{"hook_event_name":"Stop"}`, "session_id"},
		{`{"session_id":"x"` + strings.Repeat(" ", MaxInput) + `}`, "too large"},
	} {
		if _, err := Parse(strings.NewReader(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%.30q): %v, want an error about %q", tc.in, err, tc.want)
		}
	}
	if in, err := Parse(strings.NewReader(`{"session_id":"s1","tool_name":"Bash","stop_hook_active":true}`)); err != nil || in.SessionID != "s1" || !in.StopHookActive {
		t.Fatalf("good input: %+v %v", in, err)
	}
}
