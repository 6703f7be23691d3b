package agentsession

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// SessionID, DefaultName and the binding files' names follow the regular
// expressions they were written with before package ascii replaced them
// (intercom-hook links no regexp).
func TestNamesAgreeWithTheirRegexps(t *testing.T) {
	unsafeID, unsafeName := regexp.MustCompile(`[^A-Za-z0-9_-]+`), regexp.MustCompile(`[^a-z0-9_-]+`)
	file := regexp.MustCompile(`^(\d+)-(\d+)\.json$`)
	for _, s := range []string{"abc", "a b/c", "plänner", "日本語 x", "\xff-\xfe", "--x--", "ABC_def-1", "My Project (2)", "",
		"123-456.json", "1-2.json", "12-34-56.json", "-1-2.json", "1--2.json", "1-2.json.json", "a-2.json", "1-2.jso", "1-.json", "-2.json", "1-2.lock", "007-0.json"} {
		id := "cc-" + unsafeID.ReplaceAllString(s, "-")
		if len(id) > 80 {
			id = id[:80]
		}
		for len(id) < 8 {
			id += "0"
		}
		if got := SessionID("claude", s); got != id {
			t.Errorf("SessionID(claude, %q) = %q, want %q", s, got, id)
		}
		dir := strings.Trim(unsafeName.ReplaceAllString(strings.ToLower(s), "-"), "-")
		want := "codex-" + dir
		if dir == "" || dir == "." {
			want = "codex"
		}
		if !strings.Contains(s, "/") && len(want) <= 64 {
			if got := DefaultName("codex", s); got != want {
				t.Errorf("DefaultName(codex, %q) = %q, want %q", s, got, want)
			}
		}
		m := file.FindStringSubmatch(s)
		p, ok := bindingFile(s)
		if ok != (m != nil) {
			t.Errorf("bindingFile(%q) ok %v, regexp %v", s, ok, m != nil)
			continue
		}
		if ok {
			pid, _ := strconv.Atoi(m[1])
			start, _ := strconv.ParseUint(m[2], 10, 64)
			if p.Pid != pid || p.Start != start {
				t.Errorf("bindingFile(%q) = %d-%d, want %d-%d", s, p.Pid, p.Start, pid, start)
			}
		}
	}
}
