package e2e

// History and search from the command line (issue 34), as docs/cli.md
// shows them: delivered messages and topic records are kept by the broker
// and found by intercom history and intercom search through the index under
// INTERCOM_HOME/index, which is rebuilt when lost; purge and forget remove
// them.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type historyOut struct {
	Query string `json:"query"`
	Items []struct {
		Kind    string `json:"kind"`
		Snippet string `json:"snippet"`
		From    string `json:"from_name"`
		To      string `json:"to_name"`
		Message *struct {
			ID   string `json:"id"`
			Text string `json:"text"`
		} `json:"message"`
		Record *struct {
			Topic string `json:"topic"`
		} `json:"record"`
	} `json:"items"`
}

// awaitHistory runs `intercom --json ARGS` until it lists n items (the
// broker's history writer lingers a moment after an ack).
func awaitHistory(t *testing.T, h *H, n int, args ...string) historyOut {
	t.Helper()
	var out historyOut
	Eventually(t, 20*time.Second, func() bool {
		out = historyOut{}
		h.JSON(&out, args...)
		return len(out.Items) == n
	}, "%v to list %d items (have %d)", args, n, len(out.Items))
	return out
}

func TestHistorySearchAndPurgeFromTheCLI(t *testing.T) {
	t.Parallel()
	h := newH(t)
	h.WriteConfig(`{"idleExitMs": 0}`)
	planner, _ := h.Attach("--name", "planner")
	worker, _ := h.Attach("--name", "worker")
	h.OK("--session", "planner", "send", "worker", "Please migrate the billing schema tonight.")
	if ev := rsNextMessage(t, worker); ev["text"] != "Please migrate the billing schema tonight." {
		t.Fatalf("worker got %v", ev)
	}
	h.OK("--session", "worker", "send", "planner", "Migration done; billing is green.")
	rsNextMessage(t, planner)
	h.OK("--session", "worker", "publish", "billing", "Schema v7 live.")

	all := awaitHistory(t, h, 3, "history")
	if all.Items[0].Message == nil || all.Items[0].From != "planner" || all.Items[0].To != "worker" || all.Items[2].Record == nil || all.Items[2].Record.Topic != "billing" {
		t.Fatalf("history: %+v", all.Items)
	}
	checkJSON(t, "intercom-history", h.OK("--json", "history"))
	found := awaitHistory(t, h, 2, "search", "migrat*")
	checkJSON(t, "intercom-search", h.OK("--json", "search", "migrat*"))
	for _, it := range found.Items {
		if !strings.Contains(it.Snippet, "\x02Migrat") && !strings.Contains(it.Snippet, "\x02migrat") {
			t.Fatalf("search snippet %q does not mark the match", it.Snippet)
		}
	}
	awaitHistory(t, h, 1, "search", "billing", "--from", "planner")
	awaitHistory(t, h, 0, "search", "billing", "--since", "2026-01-01T00:00:00Z", "--to", "nobody")
	if out := h.OK("search", "tonight"); !strings.Contains(out, "**tonight**") || !strings.Contains(out, "planner → worker") {
		t.Fatalf("search (text) printed:\n%s", out)
	}
	if r := h.Run("search", "--since", "yesterday-ish", "x"); r.Code != 2 {
		t.Fatalf("a bad --since: exit %d, %s", r.Code, r.Stderr)
	}
	awaitHistory(t, h, 1, "history", "--topic", "billing")

	// The index is a cache: lost, it is rebuilt from the broker's history.
	if err := os.RemoveAll(filepath.Join(h.Home, "index")); err != nil {
		t.Fatal(err)
	}
	awaitHistory(t, h, 3, "search", "billing") // two messages and the topic record

	var purged struct{ Removed int }
	out := h.OK("--json", "purge", "planner", "--yes")
	checkJSON(t, "intercom-purge", out)
	if err := json.Unmarshal([]byte(out), &purged); err != nil {
		t.Fatal(err)
	}
	if purged.Removed != 2 {
		t.Fatalf("purge planner removed %d, want 2", purged.Removed)
	}
	awaitHistory(t, h, 1, "history")
	if r := h.Run("purge"); r.Code != 2 {
		t.Fatalf("purge without --yes (no terminal): exit %d", r.Code)
	}
	h.JSON(&purged, "purge", "--yes")
	awaitHistory(t, h, 0, "history")
}
