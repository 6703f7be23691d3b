package hooks

import (
	"strings"
	"testing"

	"github.com/intercom-dev/intercom/pkg/wire"
)

func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"session_id":"abc","hook_event_name":"Stop","stop_hook_active":true}`, `{}`, `null`, `{"session_id":7}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := Parse(strings.NewReader(string(data)))
		if err != nil {
			return
		}
		id := SessionID("claude", in.SessionID)
		if len(id) < 8 || len(id) > 80 || strings.ContainsAny(id, " /@\x00") {
			t.Fatalf("session id %q from %q", id, in.SessionID)
		}
	})
}

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
