package runs

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

func TestValidID(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"a", "0", "78f659a3", "q1a2b3c4d", "a_b-c", strings.Repeat("a", 64)} {
		if err := ValidID(id); err != nil {
			t.Errorf("ValidID(%q) = %v, want ok", id, err)
		}
	}
	for _, id := range []string{"", "A", "Run1", "-x", "_x", "a/b", "../x", "..", ".", "a b", "a.b", "é", "a\n", strings.Repeat("a", 65)} {
		if err := ValidID(id); err == nil {
			t.Errorf("ValidID(%q) = nil, want an error", id)
		}
	}
}

// Invalid ids never reach the file system: no path traversal through a run
// or question id, and a clear ErrNotFound.
func TestStoreRejectsInvalidIDs(t *testing.T) {
	t.Parallel()
	st := Files{Dir: filepath.Join(t.TempDir(), "runs")}
	r := &Run{ID: "abc", Agent: "w", State: StateRunning, CreatedAt: time.Now()}
	if err := st.Create(r); err != nil {
		t.Fatal(err)
	}
	if err := st.SaveQuestion(&Question{ID: "q1", RunID: "abc", Message: "m"}); err != nil {
		t.Fatal(err)
	}
	// A readable run.json outside the store that a traversal would find.
	if err := os.WriteFile(filepath.Join(filepath.Dir(st.Dir), "run.json"), []byte(`{"id":"evil"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"..", "../abc", "ABC", "", "abc/questions"} {
		if _, err := st.Load(id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Load(%q) = %v, want ErrNotFound", id, err)
		}
	}
	for _, p := range [][2]string{{"abc", ".."}, {"abc", "../q1"}, {"..", "q1"}, {"abc", "Q1"}, {"abc", "qmissing"}} {
		if _, err := st.LoadQuestion(p[0], p[1]); !errors.Is(err, ErrNotFound) {
			t.Errorf("LoadQuestion(%q, %q) = %v, want ErrNotFound", p[0], p[1], err)
		}
		if _, _, err := st.SaveAnswer(p[0], p[1], "x", "test"); !errors.Is(err, ErrNotFound) {
			t.Errorf("SaveAnswer(%q, %q) = %v, want ErrNotFound", p[0], p[1], err)
		}
	}
	if _, err := st.Load("nosuchrun"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load of a missing run = %v, want ErrNotFound", err)
	}
}

func TestChildName(t *testing.T) {
	t.Parallel()
	cases := []struct {
		agent, run string
		index      int
		indexed    bool
		want       string
	}{
		{"worker", "78f659a3", 0, false, "subagent-worker-78f659a3"},
		{"worker", "78f659a3", 0, true, "subagent-worker-78f659a3-1"},
		{"worker", "78f659a3", 2, true, "subagent-worker-78f659a3-3"},
		{"worker", "78f659a3", 2, false, "subagent-worker-78f659a3"},
		{"Code Reviewer!", "78f659a3", 0, false, "subagent-code-reviewer-78f659a3"},
		{"  --Mixed__Case--  ", "ab", 0, false, "subagent-mixed__case-ab"},
		{"", "ab", 0, false, "subagent-agent-ab"},
		{"!!!", "ab", 1, true, "subagent-agent-ab-2"},
		{"a.b/c", "ab", 0, false, "subagent-a-b-c-ab"},
	}
	for _, c := range cases {
		if got := ChildName(c.agent, c.run, c.index, c.indexed); got != c.want {
			t.Errorf("ChildName(%q, %q, %d, %t) = %q, want %q", c.agent, c.run, c.index, c.indexed, got, c.want)
		}
	}
	// Long names are cut to 64 characters and never end in '-'.
	name := ChildName(strings.Repeat("x", 54)+"-"+strings.Repeat("y", 20), "78f659a3", 0, false)
	if len(name) > 64 || strings.HasSuffix(name, "-") || !strings.HasPrefix(name, "subagent-xxx") {
		t.Errorf("long ChildName = %q (%d chars)", name, len(name))
	}
	valid := regexp.MustCompile(`^[a-z0-9_-]+$`)
	for _, agent := range []string{"Ünïcode agent", "tab\there", strings.Repeat("Z", 100)} {
		if n := ChildName(agent, "0a1b2c3d", 4, true); !valid.MatchString(n) || len(n) > 64 {
			t.Errorf("ChildName(%q) = %q: not a clean session name", agent, n)
		}
	}
}

func TestPreviewStaysWithinLimit(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("abcdefghij", 500) // 5,000 chars
	p := Preview(long, 2048)
	if n := utf8.RuneCountInString(p); n > 2048 || n < 2000 {
		t.Fatalf("preview of 5,000 chars has %d chars, want at most 2,048 (and close to it)", n)
	}
	if !strings.HasPrefix(long, strings.TrimSuffix(p, "…")) || !strings.HasSuffix(p, "…") {
		t.Fatalf("preview is not a marked prefix: %q…", p[:40])
	}
	if Preview("short", 2048) != "short" || Preview(strings.Repeat("x", 2048), 2048) != strings.Repeat("x", 2048) {
		t.Fatal("text within the limit must be kept whole")
	}
	multi := strings.Repeat("é", 3000)
	if p := Preview(multi, 100); utf8.RuneCountInString(p) > 100 || !utf8.ValidString(p) {
		t.Fatalf("multi-byte preview: %d chars, valid %t", utf8.RuneCountInString(p), utf8.ValidString(p))
	}
}

func TestStoreCreateListUpdate(t *testing.T) {
	t.Parallel()
	st := Files{Dir: filepath.Join(t.TempDir(), "runs")}
	if rs, err := st.List(); err != nil || len(rs) != 0 {
		t.Fatalf("List of a missing dir: %v, %v", rs, err)
	}
	t0 := time.Now().UTC()
	for i, id := range []string{"r-old", "r-new", "r-mid"} {
		off := map[int]time.Duration{0: 0, 1: 2 * time.Second, 2: time.Second}[i]
		if err := st.Create(&Run{ID: id, Agent: "w", State: StateStarting, CreatedAt: t0.Add(off)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Create(&Run{ID: "r-old", Agent: "w"}); err == nil {
		t.Fatal("Create of an existing run succeeded")
	}
	if err := os.WriteFile(filepath.Join(st.Dir, "stray-file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(st.Dir, "not-a-run"), 0o700); err != nil {
		t.Fatal(err)
	}
	rs, err := st.List()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range rs {
		ids = append(ids, r.ID)
	}
	if strings.Join(ids, ",") != "r-new,r-mid,r-old" {
		t.Fatalf("List order %v, want newest first and only runs", ids)
	}
	r, _ := st.Load("r-mid")
	if r.OutputPath != filepath.Join(st.RunDir("r-mid"), "output.log") {
		t.Fatalf("output path %q", r.OutputPath)
	}
	if fi, err := os.Stat(filepath.Join(st.RunDir("r-mid"), "questions")); err != nil || !fi.IsDir() {
		t.Fatalf("questions dir: %v", err)
	}
	// Update is serialised by the run's lock: no increment is lost.
	var wg sync.WaitGroup
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := st.Update("r-mid", func(r *Run) error { r.Index++; return nil }); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if r, _ := st.Load("r-mid"); r.Index != 40 {
		t.Fatalf("index after 40 locked increments = %d", r.Index)
	}
	if _, err := st.Update("r-mid", func(*Run) error { return errors.New("nope") }); err == nil {
		t.Fatal("Update did not return fn's error")
	}
	if _, err := st.Update("missing", func(*Run) error { return nil }); err == nil {
		t.Fatalf("Update of a missing run: %v", err)
	}
}
