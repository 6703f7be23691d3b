//go:build harness

package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A burst of 50 peer messages reaching a busy Claude Code agent comes to
// its model as digests, one per tool boundary, each within the configured
// budget (digestBytes) and saying how many more wait; every message
// reaches the model exactly once (docs/concepts.md, "Attention: digests
// and wake budget").
func TestClaudeBurstArrivesAsDigests(t *testing.T) {
	w, peer := claudeWorld(t)
	if err := os.WriteFile(filepath.Join(w.IntercomHome, "config.json"), []byte(`{"digestBytes": 2500}`), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := w.Project("burst")
	tag := marker("BURST")
	const n = 50
	name := func(i int) string { return fmt.Sprintf("%s-%02d", tag, i) }
	m := NewAnthropic(t)
	turns := []Turn{{Calls: []Call{Bash("echo start")}, Before: func(*Request) { // the agent is busy: its turn runs
		rows, err := w.listSessions()
		here := inDir(rows, dir)
		if err != nil || len(here) != 1 {
			t.Errorf("the agent's session in %s: %v (%d found)", dir, err, len(here))
			return
		}
		for i := range n {
			peer.Send(here[0].ID, name(i))
		}
	}}}
	for i := range 12 {
		turns = append(turns, Turn{Calls: []Call{Bash(fmt.Sprintf("echo step %d", i))}})
	}
	m.Script(append(turns, Turn{Text: "burst done"})...)
	c := w.RunClaudeOnce("claude", dir, m, "work through the steps")
	noHookFailed(t, c)
	for i := range n {
		seenOnce(t, m, name(i), "burst message "+name(i))
	}
	// Each boundary's new context: how many of the burst it carried.
	var carried []int
	first := ""
	for _, r := range m.Main() {
		text := lastUserText(r)
		if k := strings.Count(text, tag+"-"); k > 0 {
			if first == "" {
				first = text
			}
			carried = append(carried, k)
		}
	}
	total := 0
	for _, k := range carried {
		total += k
	}
	if total != n || len(carried) < 2 {
		t.Fatalf("the burst came in boundaries carrying %v (%d in all); want all %d, over more than one boundary", carried, total, n)
	}
	if want := fmt.Sprintf("%d more messages wait", n-carried[0]); !strings.Contains(first, want) {
		t.Errorf("the first digest does not say %q:\n%.3000s", want, first)
	}
	t.Logf("digests per boundary: %v", carried)
}
