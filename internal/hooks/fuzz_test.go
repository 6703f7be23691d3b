package hooks

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// FuzzParse: an accepted hook input re-encodes to JSON that parses to the
// same input, and its session id maps to a clean intercom id: 8-80 of
// letters, digits, _ and -, the harness id itself (after "cc-") when that
// was clean already, padded with 0s when short.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"session_id":"abc","hook_event_name":"Stop","stop_hook_active":true}`, `{}`, `null`, `{"session_id":7}`,
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
		text, err := json.Marshal(in)
		if err != nil {
			t.Fatalf("marshal %+v: %v", in, err)
		}
		if again, err := Parse(strings.NewReader(string(text))); err != nil || again != in {
			t.Fatalf("round trip of %q through %s: %+v, %v", data, text, again, err)
		}
		id := SessionID("claude", in.SessionID)
		if len(id) < 8 || len(id) > 80 || !strings.HasPrefix(id, "cc-") || strings.IndexFunc(id, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
		}) >= 0 {
			t.Fatalf("session id %q from %q", id, in.SessionID)
		}
		if clean := !strings.ContainsFunc(in.SessionID, func(r rune) bool { return !strings.ContainsRune(idChars, r) }); clean && len(in.SessionID) <= 77 {
			want := "cc-" + in.SessionID + strings.Repeat("0", max(0, 5-len(in.SessionID)))
			if id != want {
				t.Fatalf("clean harness id %q mapped to %q, want %q", in.SessionID, id, want)
			}
		}
	})
}

const idChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"

func TestComposeCapsWithDigest(t *testing.T) {
	var msgs []wire.Message
	for range 50 {
		msgs = append(msgs, wire.Message{ID: "m", Text: strings.Repeat("y", 500)})
	}
	text, n := Compose(msgs, func(m wire.Message) string { return m.Text + "\n" }, "cc-1")
	if len(text) > MaxContext {
		t.Fatalf("composed %d chars, want <= %d", len(text), MaxContext)
	}
	if n == 0 || n >= len(msgs) || !strings.Contains(text, "more messages: run `intercom --session cc-1 inbox`") {
		t.Fatalf("got %d of %d, digest missing: %q", n, len(msgs), text[len(text)-80:])
	}
	one, n := Compose(msgs[:1], func(m wire.Message) string { return strings.Repeat("z", 20000) }, "cc-1")
	if n != 1 || len(one) > MaxContext || !strings.Contains(one, "truncated") {
		t.Fatalf("a single huge message: n=%d len=%d", n, len(one))
	}
}
