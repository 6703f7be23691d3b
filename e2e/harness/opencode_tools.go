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
)

// OpenCode is pinned here; @opencode-ai/plugin and @opencode-ai/sdk are
// pinned to the same version (the plugin's types are the contract).
// TypeScript checks the plugin against those types (TestOpenCodePluginTypeChecks).
const (
	openCodePackage   = "opencode-ai"
	openCodeVersion   = "1.18.33"
	typescriptVersion = "5.9.3"
	nodeTypesVersion  = "20.19.43"
)

var openCodeOnce struct {
	sync.Once
	dir, skip string
	err       error
}

// openCodeDir installs (or reuses) OpenCode into its own directory under the
// harness cache, <cache>/opencode-<version>, beside @opencode-ai/plugin (which
// each test's config directory gets a copy of, so OpenCode's background npm
// install finds it there and stays quiet). The test is skipped, with one
// line, when npm cannot be reached and nothing is cached.
func openCodeDir(t *testing.T) string {
	t.Helper()
	openCodeOnce.Do(func() {
		openCodeOnce.dir, openCodeOnce.skip, openCodeOnce.err = installOpenCode()
	})
	switch {
	case openCodeOnce.skip != "":
		t.Skip("OpenCode tests skipped:", openCodeOnce.skip)
	case openCodeOnce.err != nil:
		t.Fatal(openCodeOnce.err)
	}
	return openCodeOnce.dir
}

func installOpenCode() (dir, skip string, err error) {
	cache, err := cacheDir()
	if err != nil {
		return "", "", err
	}
	dir = filepath.Join(cache, "opencode-"+openCodeVersion)
	pkgs := map[string]string{openCodePackage: openCodeVersion, "@opencode-ai/plugin": openCodeVersion, "@opencode-ai/sdk": openCodeVersion,
		"typescript": typescriptVersion, "@types/node": nodeTypesVersion}
	missing := false
	for p, v := range pkgs {
		missing = missing || !installed(dir, p, v)
	}
	if missing {
		if _, err := exec.LookPath("npm"); err != nil {
			return "", "npm is not on PATH", nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
		defer cancel()
		if out, err := run(ctx, "", "npm", "ping", "--fetch-timeout=15000", "--fetch-retries=0"); err != nil {
			return "", fmt.Sprintf("npm registry unreachable (%s)", firstLine(out, err)), nil
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", "", err
		}
		fmt.Printf("harness suite: installing %s@%s into %s\n", openCodePackage, openCodeVersion, dir)
		args := []string{"install", "--prefix", dir, "--save-exact", "--no-audit", "--no-fund", "--loglevel=error"}
		for p, v := range pkgs {
			args = append(args, p+"@"+v)
		}
		if out, err := run(ctx, dir, "npm", args...); err != nil {
			return "", "", fmt.Errorf("npm install: %w\n%s", err, out)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	if out, err := run(ctx, "", filepath.Join(dir, "node_modules", ".bin", "opencode"), "--version"); err != nil {
		return "", "", fmt.Errorf("opencode --version: %w\n%s", err, out)
	}
	return dir, "", nil
}
