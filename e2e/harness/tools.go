//go:build harness

package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// pin is one harness CLI at an exact version. Each pin is installed into
// its own directory under the cache, <cache>/<Name>-<Version>, so versions
// sit side by side and a bump (one line below) installs beside the old one.
type pin struct {
	Name, Package, Version, Bin string
}

// The harness versions the suite is pinned to: the current releases, and
// the oldest Claude Code intercom supports.
var (
	claudePin       = pin{"claude-code", "@anthropic-ai/claude-code", "2.1.332", "claude"}
	claudeOldestPin = pin{"claude-code", "@anthropic-ai/claude-code", "2.1.197", "claude"}
	codexPin        = pin{"codex", "@openai/codex", "0.171.0", "codex"}
)

const installTimeout = 10 * time.Minute

// Dir is where p is installed under cache.
func (p pin) Dir(cache string) string { return filepath.Join(cache, p.Name+"-"+p.Version) }

// BinPath is p's command under cache.
func (p pin) BinPath(cache string) string {
	return filepath.Join(p.Dir(cache), "node_modules", ".bin", p.Bin)
}

func (p pin) String() string { return p.Package + "@" + p.Version }

// binDir holds the intercom binaries under test; claudeBin,
// claudeOldestBin and codexBin are the real harness CLIs installed from
// npm (set by TestMain).
var binDir, claudeBin, claudeOldestBin, codexBin string

// Tools are the installed harness CLIs.
type Tools struct {
	Dir, Claude, ClaudeOldest, Codex string
}

// cacheDir is where the pinned CLIs live, outside the repository:
// INTERCOM_HARNESS_CACHE, else $XDG_CACHE_HOME/intercom-harness, else
// ~/.cache/intercom-harness.
func cacheDir() (string, error) {
	if d := os.Getenv("INTERCOM_HARNESS_CACHE"); d != "" {
		return filepath.Abs(d)
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("find a cache directory (set INTERCOM_HARNESS_CACHE): %w", err)
		}
		base = filepath.Join(h, ".cache")
	}
	return filepath.Join(base, "intercom-harness"), nil
}

// installTools reuses the pinned CLIs in the cache or installs them with
// npm. skip is set (and err nil) when npm cannot be reached.
func installTools() (tools Tools, skip string, err error) {
	dir, err := cacheDir()
	if err != nil {
		return tools, "", err
	}
	tools = Tools{Dir: dir, Claude: claudePin.BinPath(dir), ClaudeOldest: claudeOldestPin.BinPath(dir), Codex: codexPin.BinPath(dir)}
	if skip, err := installPins(dir, claudePin, claudeOldestPin, codexPin); skip != "" || err != nil {
		return tools, skip, err
	}
	for _, p := range []pin{claudePin, claudeOldestPin} {
		if err := nativeClaude(p.Dir(dir)); err != nil {
			return tools, "", err
		}
	}
	for _, bin := range []string{tools.Claude, tools.ClaudeOldest, tools.Codex} {
		if err := runsVersion(bin); err != nil {
			return tools, "", err
		}
	}
	return tools, "", nil
}

// installPins installs each pin missing from cache into its own directory.
// skip is set (and err nil) when npm cannot be reached.
func installPins(cache string, pins ...pin) (skip string, err error) {
	var missing []pin
	for _, p := range pins {
		if !installed(p.Dir(cache), p.Package, p.Version) {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		return "", nil
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return "npm is not on PATH", nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	if out, err := run(ctx, "", "npm", "ping", "--fetch-timeout=15000", "--fetch-retries=0"); err != nil {
		return fmt.Sprintf("npm registry unreachable (%s)", firstLine(out, err)), nil
	}
	for _, p := range missing {
		dir := p.Dir(cache)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		fmt.Printf("harness suite: installing %s into %s\n", p, dir)
		if out, err := run(ctx, dir, "npm", "install", "--prefix", dir, "--save-exact", "--no-audit", "--no-fund", "--loglevel=error", p.String()); err != nil {
			return "", fmt.Errorf("npm install %s: %w\n%s", p, err, out)
		}
	}
	return "", nil
}

// runsVersion checks that bin starts (`bin --version`).
func runsVersion(bin string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := run(ctx, "", bin, "--version"); err != nil {
		return fmt.Errorf("%s --version: %w\n%s", bin, err, out)
	}
	return nil
}

// installed reports whether the package's exact version is in dir.
func installed(dir, pkg, version string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "node_modules", pkg, "package.json"))
	if err != nil {
		return false
	}
	var p struct {
		Version string `json:"version"`
	}
	return json.Unmarshal(data, &p) == nil && p.Version == version
}

// nativeClaude runs Claude Code's postinstall when npm did not (npm 11
// holds back install scripts it was not told to allow): it puts the native
// binary in place of bin/claude.exe, as a user's install has it, so the
// process tree under test is the real one (no node wrapper).
func nativeClaude(dir string) error {
	pkgDir := filepath.Join(dir, "node_modules", claudePin.Package)
	if isNative(filepath.Join(pkgDir, "bin", "claude.exe")) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if out, err := run(ctx, pkgDir, "node", "install.cjs"); err != nil {
		return fmt.Errorf("claude-code postinstall (node install.cjs): %w\n%s", err, out)
	}
	if !isNative(filepath.Join(pkgDir, "bin", "claude.exe")) {
		return errors.New("claude-code postinstall left no native bin/claude.exe")
	}
	return nil
}

// isNative reports whether path is an ELF or Mach-O executable.
func isNative(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	magic := make([]byte, 4)
	if _, err := f.Read(magic); err != nil {
		return false
	}
	return bytes.Equal(magic, []byte("\x7fELF")) ||
		bytes.Equal(magic, []byte{0xcf, 0xfa, 0xed, 0xfe}) || bytes.Equal(magic, []byte{0xca, 0xfe, 0xba, 0xbe})
}

func run(ctx context.Context, dir, name string, args ...string) (string, error) {
	c := exec.CommandContext(ctx, name, args...)
	c.Dir = dir
	var b bytes.Buffer
	c.Stdout, c.Stderr = &b, &b
	err := c.Run()
	return b.String(), err
}

func firstLine(out string, err error) string {
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "npm notice") {
			return l
		}
	}
	return err.Error()
}
