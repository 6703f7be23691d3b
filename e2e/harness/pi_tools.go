//go:build harness

package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// PiLine is one pinned Pi release line, installed into its own directory
// of the harness cache: <cache>/pi-<version>.
type PiLine struct {
	Name    string // "1.6" or "0.73", for test names
	Package string
	Version string
	Node    string // the npm package giving a new enough node ("" = the node on PATH)
	Dir     string
}

// piLines are the two lines the extension serves: the current
// @earendil-works line (Node >= 22.19, node@24 from npm) and the old
// @mariozechner name (Node 20).
var piLines = []PiLine{
	{Name: "1.6", Package: "@earendil-works/pi-coding-agent", Version: "1.6.0", Node: "node@24.21.0"},
	{Name: "0.73", Package: "@mariozechner/pi-coding-agent", Version: "0.73.1"},
}

var (
	piOnce    sync.Once
	piSkip    string
	piErr     error
	piReady   []PiLine
	piNodeBin = map[string]string{} // line name -> node binary
)

// installPi installs (or reuses) every Pi line; skip says why they cannot
// be had (npm unreachable), like the suite's own install.
func installPi() ([]PiLine, string, error) {
	piOnce.Do(func() {
		cache, err := cacheDir()
		if err != nil {
			piErr = err
			return
		}
		for _, l := range piLines {
			l.Dir = filepath.Join(cache, "pi-"+l.Version)
			node := "node"
			if l.Node != "" {
				node = filepath.Join(l.Dir, "node_modules", ".bin", "node")
			}
			if !installed(l.Dir, l.Package, l.Version) || (l.Node != "" && !exists(node)) {
				if skip := npmReachable(); skip != "" {
					piSkip = skip
					return
				}
				if err := os.MkdirAll(l.Dir, 0o755); err != nil {
					piErr = err
					return
				}
				pkgs := []string{l.Package + "@" + l.Version}
				if l.Node != "" {
					pkgs = append(pkgs, l.Node)
				}
				fmt.Printf("harness suite: installing %v into %s\n", pkgs, l.Dir)
				ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
				out, err := run(ctx, l.Dir, "npm", append([]string{"install", "--prefix", l.Dir, "--save-exact", "--no-audit", "--no-fund", "--loglevel=error"}, pkgs...)...)
				cancel()
				if err != nil {
					piErr = fmt.Errorf("npm install %v: %w\n%s", pkgs, err, out)
					return
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			out, err := run(ctx, "", node, filepath.Join(l.Dir, "node_modules", ".bin", "pi"), "--version")
			cancel()
			if err != nil {
				piErr = fmt.Errorf("pi %s --version: %w\n%s", l.Version, err, out)
				return
			}
			piNodeBin[l.Name] = node
			piReady = append(piReady, l)
		}
	})
	return piReady, piSkip, piErr
}

// npmReachable is "" when npm can reach its registry, else why not.
func npmReachable() string {
	if _, err := exec.LookPath("npm"); err != nil {
		return "npm is not on PATH"
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := run(ctx, "", "npm", "ping", "--fetch-timeout=15000", "--fetch-retries=0"); err != nil {
		return fmt.Sprintf("npm registry unreachable (%s)", firstLine(out, err))
	}
	return ""
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// eachPi runs f as a subtest for every Pi line; the test is skipped, with
// one line, when the lines cannot be installed.
func eachPi(t *testing.T, f func(t *testing.T, line PiLine)) {
	t.Helper()
	lines, skip, err := installPi()
	if skip != "" {
		t.Skip("pi not installed:", skip)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		t.Run("pi-"+l.Name, func(t *testing.T) { f(t, l) })
	}
}

// argv is the command line that runs this line's pi with args.
func (l PiLine) argv(args ...string) []string {
	return append([]string{piNodeBin[l.Name], filepath.Join(l.Dir, "node_modules", ".bin", "pi")}, args...)
}

var (
	runsOnce sync.Once
	runsBin  string
	runsErr  error
)

// agentRunsBin is agent-runs: the one in binDir, else built from this tree
// (the suite's TestMain builds intercom and intercom-broker only) into
// TestMain's own binDir, which it removes at the end, or, when binDir is
// INTERCOM_HARNESS_BIN's, into a temporary directory beside it.
func agentRunsBin(t *testing.T) string {
	t.Helper()
	runsOnce.Do(func() {
		if p := filepath.Join(binDir, "agent-runs"); exists(p) {
			runsBin = p
			return
		}
		dir := binDir
		if os.Getenv("INTERCOM_HARNESS_BIN") != "" {
			var err error
			if dir, err = os.MkdirTemp("", "ic-harness-runs-"); err != nil {
				runsErr = err
				return
			}
		}
		out, err := exec.Command("go", "build", "-o", dir+"/", "../../cmd/agent-runs").CombinedOutput()
		if err != nil {
			runsErr = fmt.Errorf("build agent-runs: %w\n%s", err, out)
			return
		}
		runsBin = filepath.Join(dir, "agent-runs")
	})
	if runsErr != nil {
		t.Fatal(runsErr)
	}
	return runsBin
}

// runCmd runs agent-runs ARGS in dir with the world's environment and
// returns its stdout; a failure fails the test.
func (w *World) runCmd(dir string, args ...string) string {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, agentRunsBin(w.t), args...)
	c.Env, c.Dir = w.Env, dir
	out, err := c.Output()
	if err != nil {
		w.t.Fatalf("agent-runs %v: %v\n%s", args, err, out)
	}
	return string(out)
}
