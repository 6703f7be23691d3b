package hookcmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/internal/hooks"
)

// Args takes HARNESS EVENT with an optional --hold, and nothing else (the
// caller shows its usage for any other form).
func TestArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
		want hooks.Call
	}{
		{[]string{"claude", "PostToolUse"}, true, hooks.Call{Harness: "claude", Event: "PostToolUse"}},
		{[]string{"gemini", "AfterAgent", "--hold", "5m"}, true, hooks.Call{Harness: "gemini", Event: "AfterAgent", Hold: 5 * time.Minute}},
		{[]string{"gemini", "--hold=30s", "AfterAgent"}, true, hooks.Call{Harness: "gemini", Event: "AfterAgent", Hold: 30 * time.Second}},
		{[]string{"claude"}, false, hooks.Call{}},
		{[]string{"claude", "PostToolUse", "extra"}, false, hooks.Call{}},
		{[]string{"--help"}, false, hooks.Call{}},
		{[]string{"claude", "Stop", "--hold"}, false, hooks.Call{}},
		{[]string{"claude", "Stop", "--hold", "soon"}, false, hooks.Call{}},
		{[]string{"claude", "Stop", "--hold=-1s"}, false, hooks.Call{}},
		{[]string{"claude", "Stop", "-v"}, false, hooks.Call{}},
		{nil, false, hooks.Call{}},
	} {
		got, ok := Args(tc.args)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("Args(%q) = %+v, %v; want %+v, %v", tc.args, got, ok, tc.want, tc.ok)
		}
	}
}

// Main: a usage error exits 2 with one line; a call that parses exits 0
// whatever happens, and Gemini CLI gets JSON even when the config is bad.
func TestMainNeverBreaksTheHarness(t *testing.T) {
	home := t.TempDir()
	t.Setenv("INTERCOM_HOME", home)
	t.Setenv("INTERCOM_SOCKET", "")
	var out, errb bytes.Buffer
	if code := Main(context.Background(), []string{"claude"}, strings.NewReader(""), &out, &errb); code != 2 || strings.Count(errb.String(), "\n") != 1 {
		t.Fatalf("usage error: exit %d, stderr %q", code, errb.String())
	}
	out.Reset()
	if code := Main(context.Background(), []string{"--help"}, strings.NewReader(""), &out, &errb); code != 0 || !strings.Contains(out.String(), "intercom-hook HARNESS EVENT") {
		t.Fatalf("--help: exit %d, stdout %q", code, out.String())
	}
	out.Reset()
	if code := Main(context.Background(), []string{"version"}, strings.NewReader(""), &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "intercom-hook ") || !strings.Contains(out.String(), "(commit ") {
		t.Fatalf("version: exit %d, stdout %q", code, out.String())
	}
	out.Reset()
	if code := Main(context.Background(), []string{"version", "--json"}, strings.NewReader(""), &out, &errb); code != 0 || !strings.Contains(out.String(), `"go":`) {
		t.Fatalf("version --json: exit %d, stdout %q", code, out.String())
	}
	if err := os.WriteFile(filepath.Join(home, "config.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errb.Reset()
	code := Main(context.Background(), []string{"gemini", "AfterTool"}, strings.NewReader(`{"session_id":"s"}`), &out, &errb)
	if code != 0 || out.String() != string(hooks.Empty) || !strings.Contains(errb.String(), "did nothing") {
		t.Fatalf("bad config: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}

// The forms a harness or a person can get wrong, and the --hold path that
// alone handles signals: each answers in one line and never breaks the
// harness.
func TestMainEdges(t *testing.T) {
	home := t.TempDir()
	t.Setenv("INTERCOM_HOME", home)
	t.Setenv("INTERCOM_SOCKET", filepath.Join(home, "no-broker.sock"))
	var out, errb bytes.Buffer
	if code := Main(context.Background(), []string{"version", "--yaml"}, strings.NewReader(""), &out, &errb); code != 2 || strings.Count(errb.String(), "\n") != 1 || !strings.Contains(errb.String(), "--yaml") {
		t.Fatalf("version --yaml: exit %d, stderr %q", code, errb.String())
	}

	// An ignored key in config.json warns once and the hook goes on.
	if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(`{"noSuchSetting": 1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errb.Reset()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the broker is never reached: only the parsing is under test
	code := Main(ctx, []string{"claude", "PreToolUse"}, strings.NewReader("not json"), &out, &errb)
	if code != 0 || out.Len() != 0 {
		t.Fatalf("PreToolUse, bad input: exit %d, stdout %q", code, out.String())
	}
	if !strings.Contains(errb.String(), "intercom: warning:") || !strings.Contains(errb.String(), "noSuchSetting") {
		t.Fatalf("ignored key: no warning naming it in %q", errb.String())
	}
	if !strings.Contains(errb.String(), "intercom hook claude PreToolUse: ") {
		t.Fatalf("PreToolUse, bad input: want one line naming the hook, got %q", errb.String())
	}

	// A Stop hook with --hold sets up its signal handling and, its context
	// ended, answers at once.
	out.Reset()
	errb.Reset()
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"claude", "Stop", "--hold", "1m"}, strings.NewReader(`{"session_id":"s","hook_event_name":"Stop"}`), &out, &errb)
	}()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("Stop --hold with its context ended: exit %d, stderr %q", code, errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Stop --hold with its context ended did not return")
	}
}
