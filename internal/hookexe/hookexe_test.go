package hookexe

import (
	"os"
	"path/filepath"
	"testing"
)

// Beside finds an executable intercom-hook beside intercom, and nothing
// else; CLI maps intercom-hook to the intercom beside it and leaves any
// other program as it is.
func TestBesideAndCLI(t *testing.T) {
	dir := t.TempDir()
	cli := filepath.Join(dir, "intercom")
	if _, ok := Beside(cli); ok {
		t.Fatal("Beside found an intercom-hook in an empty directory")
	}
	hook := filepath.Join(dir, Name)
	if err := os.WriteFile(hook, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := Beside(cli); ok {
		t.Fatal("Beside took an intercom-hook that is not executable")
	}
	if err := os.Chmod(hook, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, ok := Beside(cli); !ok || got != hook {
		t.Fatalf("Beside(%s) = %q, %v; want %s", cli, got, ok, hook)
	}
	if got := CLI(hook); got != cli {
		t.Errorf("CLI(%s) = %s, want %s", hook, got, cli)
	}
	if got := CLI(cli); got != cli {
		t.Errorf("CLI(%s) = %s, want it unchanged", cli, got)
	}
	if !Is("/x/intercom-hook.exe") || Is("/x/intercom") || Is("/x/intercom-hook-old") {
		t.Error("Is takes the wrong names")
	}
}
