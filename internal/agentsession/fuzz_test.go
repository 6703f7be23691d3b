package agentsession

import (
	"strings"
	"testing"
)

const idChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"

// FuzzSessionID: a harness id maps to a clean intercom id: 8-80 of letters,
// digits, _ and -, the harness id itself (after "cc-") when that was clean
// already, padded with 0s when short.
func FuzzSessionID(f *testing.F) {
	for _, s := range []string{"abc", "0a1b2c3d-aaaa-bbbb-cccc-0123456789ab", "a b/c@d\x00é", strings.Repeat("x", 100), ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, harnessID string) {
		id := SessionID("claude", harnessID)
		if len(id) < 8 || len(id) > 80 || !strings.HasPrefix(id, "cc-") || strings.ContainsFunc(id, func(r rune) bool { return !strings.ContainsRune(idChars, r) }) {
			t.Fatalf("session id %q from %q", id, harnessID)
		}
		if clean := !strings.ContainsFunc(harnessID, func(r rune) bool { return !strings.ContainsRune(idChars, r) }); clean && len(harnessID) <= 77 {
			want := "cc-" + harnessID + strings.Repeat("0", max(0, 5-len(harnessID)))
			if id != want {
				t.Fatalf("clean harness id %q mapped to %q, want %q", harnessID, id, want)
			}
		}
	})
}
