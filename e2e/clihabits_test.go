package e2e

// CLI habits (B14): version, bare usage, help examples and shell completion
// on all four binaries.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var allBins = []string{"intercom", "intercom-broker", "agent-runs", "intercom-bridge"}

func TestCLIVersionOnEveryBinary(t *testing.T) {
	t.Parallel()
	h := newH(t)
	for _, bin := range allBins {
		r := fndRunBin(h, bin, "version")
		if r.Code != 0 || !strings.HasPrefix(r.Stdout, bin+" ") || !strings.Contains(r.Stdout, "(commit ") || !strings.Contains(r.Stdout, "go1.") || r.Stderr != "" {
			t.Errorf("%s version: exit %d stdout %q stderr %q", bin, r.Code, r.Stdout, r.Stderr)
		}
		r = fndRunBin(h, bin, "version", "--json")
		var in struct{ Version, Commit, Go, OS, Arch string }
		if err := json.Unmarshal([]byte(r.Stdout), &in); r.Code != 0 || err != nil || in.Version == "" || !strings.HasPrefix(in.Go, "go1.") || in.OS == "" || in.Arch == "" {
			t.Errorf("%s version --json: exit %d %q (%v)", bin, r.Code, r.Stdout, err)
		}
		r = fndRunBin(h, bin, "--version")
		if r.Code != 0 || !strings.HasPrefix(r.Stdout, bin+" ") || r.Stderr != "" {
			t.Errorf("%s --version: exit %d stdout %q stderr %q (want the version on stdout)", bin, r.Code, r.Stdout, r.Stderr)
		}
	}
	if fndExists(h.Home) {
		t.Errorf("version created %s: it must not need a broker or a state dir", h.Home)
	}
}

func TestCLIBareCommandPrintsUsage(t *testing.T) {
	t.Parallel()
	h := newH(t)
	for _, bin := range []string{"intercom", "agent-runs", "intercom-bridge"} {
		r := fndRunBin(h, bin)
		if r.Code != 0 || !strings.HasPrefix(r.Stdout, "Usage: "+bin) || !strings.Contains(r.Stdout, "Examples:") || r.Stderr != "" {
			t.Errorf("bare %s: exit %d stdout %q stderr %q, want the short usage and 0", bin, r.Code, r.Stdout, r.Stderr)
		}
		if n := strings.Count(r.Stdout, "\n"); n > 30 {
			t.Errorf("bare %s prints %d lines; the short usage should be short", bin, n)
		}
	}
}

// completions asks bin, the way a shell does, what completes line.
func completions(t *testing.T, h *H, bin, line string) []string {
	t.Helper()
	c := exec.Command(filepath.Join(binDir, bin))
	c.Env = append(os.Environ(), "INTERCOM_HOME="+h.Home, "COMP_LINE="+line)
	out, err := c.Output()
	if err != nil {
		t.Fatalf("complete %q: %v", line, err)
	}
	return strings.Fields(string(out))
}

// Every visible command of every binary shows examples in its help; the
// command list comes from the completion protocol, so a new command cannot
// slip through.
func TestCLIEveryCommandHasExamples(t *testing.T) {
	t.Parallel()
	h := newH(t)
	for _, bin := range allBins {
		queue := [][]string{{}}
		seen := 0
		for len(queue) > 0 {
			path := queue[0]
			queue = queue[1:]
			line := strings.Join(append([]string{bin}, path...), " ") + " "
			var subs []string
			for _, w := range completions(t, h, bin, line) {
				if !strings.HasPrefix(w, "-") {
					subs = append(subs, w)
				}
			}
			if len(path) > 0 && len(subs) > 0 && path[len(path)-1] != "help" && path[len(path)-1] != "completion" {
				for _, s := range subs {
					queue = append(queue, append(append([]string{}, path...), s))
				}
				continue
			}
			if len(path) == 0 {
				for _, s := range subs {
					queue = append(queue, []string{s})
				}
				if len(subs) == 0 {
					t.Fatalf("%s offers no commands to complete", bin)
				}
			}
			r := fndRunBin(h, bin, append(append([]string{}, path...), "--help")...)
			seen++
			if r.Code != 0 || !strings.Contains(r.Stdout, "Examples:") {
				t.Errorf("%s %s --help: exit %d, no Examples: section\n%s", bin, strings.Join(path, " "), r.Code, r.Stdout)
			}
		}
		t.Logf("%s: %d help pages have examples", bin, seen)
		if seen < 4 {
			t.Errorf("%s: only %d help pages checked", bin, seen)
		}
	}
}

// The generated bash script loads in bash and registers completion that
// answers with the binary's commands and enum values.
func TestCLICompletionLoadsInBash(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	h := newH(t)
	for _, bin := range []string{"intercom", "agent-runs", "intercom-bridge"} {
		script := filepath.Join(t.TempDir(), bin+".bash")
		r := fndRunBin(h, bin, "completion", "bash")
		if r.Code != 0 {
			t.Fatalf("%s completion bash: exit %d %s", bin, r.Code, r.Stderr)
		}
		if err := os.WriteFile(script, []byte(r.Stdout), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("bash", "--norc", "--noprofile", "-c", "source "+script+" && complete -p "+bin).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "-C '"+filepath.Join(binDir, bin)+"' "+bin) {
			t.Fatalf("%s: bash could not load the script or registered no completion: %v\n%s\nscript:\n%s", bin, err, out, r.Stdout)
		}
	}
	if got := completions(t, h, "intercom", "intercom li"); strings.Join(got, " ") != "list" {
		t.Errorf("intercom li<TAB> = %q, want list", got)
	}
	if got := completions(t, h, "intercom", "intercom list --scope "); strings.Join(got, " ") != "project all" && strings.Join(got, " ") != "all project" {
		t.Errorf("intercom list --scope <TAB> = %q, want project and all", got)
	}
	if got := completions(t, h, "agent-runs", "agent-runs qu"); strings.Join(got, " ") != "questions" {
		t.Errorf("agent-runs qu<TAB> = %q, want questions", got)
	}
	for _, shell := range []string{"zsh", "fish"} {
		if r := fndRunBin(h, "intercom", "completion", shell); r.Code != 0 || !strings.Contains(r.Stdout, "intercom") {
			t.Errorf("intercom completion %s: exit %d %q", shell, r.Code, r.Stdout)
		}
	}
}
