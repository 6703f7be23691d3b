package kongrun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

type testCLI struct {
	JSON    bool   `help:"Print JSON."`
	Session string `help:"Act as this session."`
	Do      struct {
		Loud bool `help:"Shout."`
	} `cmd:"" help:"Do a thing."`
	Builtins
}

func runTest(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	var c testCLI
	ran := false
	code := Run("tool", &c, args, &out, &errb, []kong.Option{kong.Name("tool"), kong.Description("A tool.\n\nExamples:\n  tool do"), kong.Writers(&out, &errb)},
		func(*kong.Context) int { ran = true; return 7 })
	if ran != (code == 7) {
		t.Fatalf("run called %t but status %d", ran, code)
	}
	return code, out.String(), errb.String()
}

func TestBareCommandPrintsShortUsage(t *testing.T) {
	code, out, errs := runTest(t)
	if code != 0 || errs != "" {
		t.Fatalf("bare: status %d stderr %q, want 0 and nothing", code, errs)
	}
	for _, want := range []string{"Usage: tool <command>", "Examples:", "Commands: do, help, version, completion", `Run "tool --help"`} {
		if !strings.Contains(out, want) {
			t.Errorf("bare output lacks %q:\n%s", want, out)
		}
	}
}

func TestVersionPlainAndJSON(t *testing.T) {
	code, out, _ := runTest(t, "version")
	if code != 0 || !strings.HasPrefix(out, "tool ") || !strings.Contains(out, "(commit ") || !strings.Contains(out, "go1.") {
		t.Fatalf("version: %d %q", code, out)
	}
	code, out, _ = runTest(t, "version", "--json")
	var in map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &in) != nil || in["version"] == "" || in["go"] == nil || in["os"] == nil {
		t.Fatalf("version --json: %d %q", code, out)
	}
	if code, out, _ = runTest(t, "--version"); code != 0 || !strings.HasPrefix(out, "tool ") {
		t.Fatalf("--version: %d %q", code, out)
	}
}

func TestSubcommandHelpNamesGlobalFlagsOnce(t *testing.T) {
	code, out, _ := runTest(t, "do", "--help")
	if code != 0 {
		t.Fatalf("do --help: status %d", code)
	}
	if strings.Contains(out, "Act as this session") || !strings.Contains(out, "Shout.") {
		t.Fatalf("do --help repeats the global flags or lacks its own:\n%s", out)
	}
	if !strings.Contains(out, "Global flags: --json, --session") {
		t.Fatalf("do --help does not name the global flags:\n%s", out)
	}
	if _, root, _ := runTest(t, "--help"); !strings.Contains(root, "Act as this session") {
		t.Fatalf("root --help lacks the global flags:\n%s", root)
	}
	// The flags are hidden only while printing.
	if code, _, _ := runTest(t, "do", "--session", "x"); code != 7 {
		t.Fatalf("do --session x: status %d", code)
	}
}

func TestHelpCommand(t *testing.T) {
	code, out, _ := runTest(t, "help", "do")
	if code != 0 || !strings.Contains(out, "Usage: tool do") {
		t.Fatalf("help do: %d %q", code, out)
	}
	code, _, errs := runTest(t, "help", "nosuch")
	if code != 2 || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, "nosuch") {
		t.Fatalf("help nosuch: %d %q, want 2 and one line", code, errs)
	}
}

func TestParseErrorIsOneLineExit2(t *testing.T) {
	code, _, errs := runTest(t, "do", "--bogus")
	if code != 2 || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, "--bogus") {
		t.Fatalf("bad flag: %d %q", code, errs)
	}
}

func TestCompletionScripts(t *testing.T) {
	for shell, want := range map[string]string{"bash": "complete ", "zsh": "bashcompinit", "fish": "complete -f -c tool"} {
		code, out, _ := runTest(t, "completion", shell)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("completion %s: %d %q, want %q", shell, code, out, want)
		}
	}
	if code, _, _ := runTest(t, "completion", "tcsh"); code != 2 {
		t.Errorf("completion tcsh: status %d, want 2", code)
	}
}

func TestCompletionAnswersTheShell(t *testing.T) {
	t.Setenv("COMP_LINE", "tool d")
	t.Setenv("COMP_POINT", "6")
	code, out, _ := runTest(t)
	if code != 0 || strings.TrimSpace(out) != "do" {
		t.Fatalf("COMP_LINE=%q: %d %q, want do", "tool d", code, out)
	}
}

func TestReportStatusesAndCodes(t *testing.T) {
	for _, tc := range []struct {
		name       string
		err        error
		status     int
		code, text string // code "" means nothing is printed
	}{
		{"nil", nil, 0, "", ""},
		{"usage", Usagef("--limit must be >= 0"), 2, "usage", "--limit must be >= 0"},
		{"wrapped usage", fmt.Errorf("send: %w", Usage(errors.New("bad target"))), 2, "usage", "send: bad target"},
		{"failure", errors.New("disk on fire"), 1, "failed", "disk on fire"},
		{"interrupted", fmt.Errorf("wait: %w", context.Canceled), 130, "interrupted", "interrupted"},
		{"exit with message", Exit(1, "send cancelled"), 1, "failed", "send cancelled"},
		{"silent exit", Exit(2, ""), 2, "", ""},
		{"store unavailable", Exit(StatusStoreUnavailable, ""), 3, "", ""},
	} {
		var out, errb bytes.Buffer
		if got := Report("tool", &out, &errb, false, tc.err); got != tc.status {
			t.Errorf("%s: status %d, want %d", tc.name, got, tc.status)
		}
		if tc.code == "" {
			if out.Len()+errb.Len() != 0 {
				t.Errorf("%s: printed %q %q, want nothing", tc.name, out.String(), errb.String())
			}
			continue
		}
		if want := "tool: " + tc.text + "\n"; errb.String() != want || out.Len() != 0 {
			t.Errorf("%s: stderr %q stdout %q, want stderr %q", tc.name, errb.String(), out.String(), want)
		}
		out.Reset()
		errb.Reset()
		Report("tool", &out, &errb, true, tc.err)
		var env struct {
			Error struct{ Code, Message string }
		}
		if err := json.Unmarshal(out.Bytes(), &env); err != nil || env.Error.Code != tc.code || errb.Len() != 0 {
			t.Errorf("%s --json: stdout %q stderr %q (%v), want code %q on stdout only", tc.name, out.String(), errb.String(), err, tc.code)
		}
	}
}
