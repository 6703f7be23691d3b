//go:build harness

package harness

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// allowClaudeEdits lets headless Claude Code use Write and Edit without
// asking (the user's permission allow list), so that only a hook stands
// between the model and the file.
func allowClaudeEdits(t *testing.T, w *World) {
	t.Helper()
	path := filepath.Join(w.Home, ".claude", "settings.json")
	doc := map[string]any{}
	if data, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
	}
	doc["permissions"] = map[string]any{"allow": []any{"Write", "Edit"}}
	if err := os.WriteFile(path, []byte(mustJSON(doc)), 0o600); err != nil {
		t.Fatal(err)
	}
}

// anyRequestHolds reports whether a request of m holds every one of want.
func anyRequestHolds(m *Model, want ...string) bool {
	for _, r := range m.Requests() {
		all := true
		for _, s := range want {
			all = all && r.Contains(s)
		}
		if all {
			return true
		}
	}
	return false
}

// TestReservationBlocksClaudeAndCodexEdits: a path another session holds
// cannot be written through the real Claude Code's Write tool nor the real
// Codex's shell tool (their PreToolUse hooks, as `intercom install` wrote
// them); the model reads who holds it, why and how to ask. Claude Code's
// own reservation never blocks its own edit.
func TestReservationBlocksClaudeAndCodexEdits(t *testing.T) {
	w := NewWorld(t)
	w.InstallClaude()
	w.InstallCodex()
	allowClaudeEdits(t, w)
	dir := w.Project("shared")
	holder := w.StartPeer("holder")
	if r := w.Intercom(dir, nil, "--session", holder.ID, "reserve", "held.txt", "--reason", "holder rewrites it"); r.Code != 0 {
		t.Fatalf("reserve: exit %d: %s", r.Code, r.Stderr)
	}
	held, mine := filepath.Join(dir, "held.txt"), filepath.Join(dir, "mine.txt")

	m := NewAnthropic(t)
	m.Script(
		Turn{Calls: []Call{{Name: "Write", Args: map[string]any{"file_path": held, "content": "claude was here"}}}},
		Turn{Calls: []Call{Bash("intercom reserve mine.txt --reason 'my notes'")}},
		Turn{Calls: []Call{{Name: "Write", Args: map[string]any{"file_path": mine, "content": "claude's own"}}}},
		Turn{Text: "claude done"},
	)
	cl := w.StartClaude("claude", dir, m)
	cl.Turn("edit the files", "claude done", turnTimeout)
	noHookFailed(t, cl)
	if _, err := os.Stat(held); !os.IsNotExist(err) {
		t.Fatalf("Claude Code wrote the reserved held.txt (stat: %v)", err)
	}
	if !anyRequestHolds(m, "held.txt is reserved by holder", "holder rewrites it", "intercom ask holder") {
		t.Fatalf("the model was never told who holds held.txt and how to ask")
	}
	if data, err := os.ReadFile(mine); err != nil || string(data) != "claude's own" {
		t.Fatalf("Claude Code's edit of its own reservation: %q %v", data, err)
	}

	mc := NewResponses(t)
	mc.Script(Turn{Calls: []Call{Shell("printf codex > held.txt")}}, Turn{Text: "codex done"})
	cx := w.StartCodex("codex", dir, mc, "write held.txt")
	cx.Finish(turnTimeout)
	if _, err := os.Stat(held); !os.IsNotExist(err) {
		t.Fatalf("Codex wrote the reserved held.txt (stat: %v)", err)
	}
	if !anyRequestHolds(mc, "held.txt is reserved by holder") {
		t.Fatalf("Codex's model was never told held.txt is reserved: %s", strings.Join(cx.AgentMessages(), " | "))
	}
	if !anyRequestHolds(m, "mine.txt") || anyRequestHolds(m, "mine.txt is reserved") {
		t.Fatalf("Claude Code's own reservation blocked it")
	}
}

// TestReservationBlocksPiEdit: the real Pi's write of a path another
// session holds is blocked by the extension's tool_call check (the model
// reads who holds it); Pi's own reservation never blocks its own write.
func TestReservationBlocksPiEdit(t *testing.T) {
	eachPi(t, func(t *testing.T, line PiLine) {
		w, _ := piWorld(t)
		dir := w.Project("shared")
		holder := w.StartPeer("holder")
		if r := w.Intercom(dir, nil, "--session", holder.ID, "reserve", "held.txt", "--reason", "holder rewrites it"); r.Code != 0 {
			t.Fatalf("reserve: exit %d: %s", r.Code, r.Stderr)
		}
		held, mine := filepath.Join(dir, "held.txt"), filepath.Join(dir, "mine.txt")
		m := NewAnthropic(t)
		m.Script(
			Turn{Calls: []Call{{Name: "write", Args: map[string]any{"path": "held.txt", "content": "pi was here"}}}},
			Turn{Calls: []Call{PiBash("intercom reserve mine.txt")}},
			Turn{Calls: []Call{{Name: "write", Args: map[string]any{"path": "mine.txt", "content": "pi's own"}}}},
			Turn{Text: "pi done"},
		)
		w.RunPiOnce("pi", dir, line, m, "edit the files", nil)
		if _, err := os.Stat(held); !os.IsNotExist(err) {
			t.Fatalf("Pi wrote the reserved held.txt (stat: %v)", err)
		}
		if !anyRequestHolds(m, "held.txt is reserved by holder", "intercom ask holder") {
			t.Fatalf("Pi's model was never told who holds held.txt")
		}
		if data, err := os.ReadFile(mine); err != nil || string(data) != "pi's own" {
			t.Fatalf("Pi's write of its own reservation: %q %v", data, err)
		}
	})
}

// reserveAsHolder starts the peer "holder" and reserves held.txt in dir
// for it.
func reserveAsHolder(t *testing.T, w *World, dir string) {
	t.Helper()
	holder := w.StartPeer("holder")
	if r := w.Intercom(dir, nil, "--session", holder.ID, "reserve", "held.txt", "--reason", "holder rewrites it"); r.Code != 0 {
		t.Fatalf("reserve: exit %d: %s", r.Code, r.Stderr)
	}
}

// checkHeldAndMine fails unless held.txt was not written, the model read
// who holds it and how to ask, and mine.txt (its own reservation) holds
// want.
func checkHeldAndMine(t *testing.T, m *Model, dir, harness, want string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "held.txt")); !os.IsNotExist(err) {
		t.Fatalf("%s wrote the reserved held.txt (stat: %v)", harness, err)
	}
	if !anyRequestHolds(m, "held.txt is reserved by holder", "holder rewrites it", "intercom ask holder") {
		t.Fatalf("%s's model was never told who holds held.txt and how to ask", harness)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "mine.txt")); err != nil || string(data) != want {
		t.Fatalf("%s's edit of its own reservation: %q %v", harness, data, err)
	}
}

// TestReservationBlocksGeminiEdit: the real Gemini CLI's write_file of a
// path another session holds is denied by its BeforeTool hook, as
// `intercom install gemini` wrote it (the model reads who holds it and how
// to ask); its own reservation never blocks its own write.
func TestReservationBlocksGeminiEdit(t *testing.T) {
	w := NewWorld(t)
	w.InstallGemini()
	dir := w.Project("shared")
	reserveAsHolder(t, w, dir)
	held, mine := filepath.Join(dir, "held.txt"), filepath.Join(dir, "mine.txt")
	m := NewGemini(t)
	g := geminiKind.start(t, w, dir, m).(*geminiSession)
	m.Script(
		Turn{Calls: []Call{{Name: "write_file", Args: map[string]any{"file_path": held, "content": "gemini was here"}}}},
		Turn{Calls: []Call{GeminiShell("intercom reserve mine.txt --reason 'my notes'")}},
		Turn{Calls: []Call{{Name: "write_file", Args: map[string]any{"file_path": mine, "content": "gemini's own"}}}},
		Turn{Text: "gemini done"},
	)
	g.Turn("edit the files", "gemini done")
	g.Check(t)
	checkHeldAndMine(t, m, dir, "Gemini CLI", "gemini's own")
}

// TestReservationBlocksOpenCodeEdit: the real OpenCode's write of a path
// another session holds is refused by the plugin's tool.execute.before
// (the model reads who holds it); its own reservation never blocks its own
// write.
func TestReservationBlocksOpenCodeEdit(t *testing.T) {
	w, m, _ := openCodeWorld(t)
	dir := w.Project("shared")
	reserveAsHolder(t, w, dir)
	held, mine := filepath.Join(dir, "held.txt"), filepath.Join(dir, "mine.txt")
	m.Script(
		Turn{Calls: []Call{{Name: "write", Args: map[string]any{"filePath": held, "content": "opencode was here"}}}},
		Turn{Calls: []Call{OpenCodeBash("intercom reserve mine.txt --reason 'my notes'")}},
		Turn{Calls: []Call{{Name: "write", Args: map[string]any{"filePath": mine, "content": "opencode's own"}}}},
		Turn{Text: "opencode done"},
	)
	w.RunOpenCode("opencode", dir, m, "edit the files").Finish(turnTimeout)
	checkHeldAndMine(t, m, dir, "OpenCode", "opencode's own")
}
