//go:build harness

package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestMain installs (or reuses) the pinned harness CLIs, then builds the
// intercom binaries with -race (HARNESS_NORACE=1: without), or takes them
// from INTERCOM_HARNESS_BIN. When npm cannot be reached and the CLIs are not
// cached, it prints one line saying so and exits 0.
func TestMain(m *testing.M) {
	tools, skip, err := installTools()
	if skip != "" {
		fmt.Println("harness suite skipped:", skip)
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "harness suite:", err)
		os.Exit(1)
	}
	claudeBin, claudeOldestBin, codexBin = tools.Claude, tools.ClaudeOldest, tools.Codex
	if geminiBin, geminiSkip, err = installGemini(tools.Dir); err != nil {
		fmt.Fprintln(os.Stderr, "harness suite:", err)
		os.Exit(1)
	}
	cleanup := func() {}
	binDir = os.Getenv("INTERCOM_HARNESS_BIN")
	if binDir == "" {
		dir, err := os.MkdirTemp("", "ic-harness-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "harness suite:", err)
			os.Exit(1)
		}
		args := []string{"build", "-race", "-o", dir + "/", "../../cmd/intercom", "../../cmd/intercom-hook", "../../cmd/intercom-broker"}
		if os.Getenv("HARNESS_NORACE") != "" {
			args = append([]string{"build"}, args[2:]...)
		}
		build := exec.Command("go", args...)
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "harness suite: build binaries:", err)
			os.Exit(1)
		}
		binDir = dir
		cleanup = func() { _ = os.RemoveAll(dir) }
	}
	if abs, err := filepath.Abs(binDir); err == nil {
		binDir = abs
	}
	for _, b := range []string{"intercom", "intercom-broker"} {
		if _, err := os.Stat(filepath.Join(binDir, b)); err != nil {
			fmt.Fprintf(os.Stderr, "harness suite: INTERCOM_HARNESS_BIN=%s has no %s\n", binDir, b)
			os.Exit(1)
		}
	}
	fmt.Printf("harness suite: intercom from %s; claude %s (and %s); codex %s\n", binDir, tools.Claude, tools.ClaudeOldest, tools.Codex)
	if geminiSkip != "" {
		fmt.Println("harness suite: gemini tests skipped:", geminiSkip)
	}
	code := m.Run()
	cleanup()
	os.Exit(code)
}
