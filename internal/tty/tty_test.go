package tty

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Files, pipes and buffers are not terminals, so they get no colour and no
// width, whatever NO_COLOR says. (The terminal side is tested under tmux in
// e2e: TestListTableInTmux.)
func TestNotATerminal(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	var nilFile *os.File
	for name, v := range map[string]any{"file": f, "pipe": w, "buffer": &bytes.Buffer{}, "nil file": nilFile, "nil": nil} {
		if Is(v) || Colour(v) || Width(v) != 0 {
			t.Errorf("%s: Is %t Colour %t Width %d, want false false 0", name, Is(v), Colour(v), Width(v))
		}
	}
}
