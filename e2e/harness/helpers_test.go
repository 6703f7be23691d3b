//go:build harness

package harness

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// marker is a unique word to find in what the model was sent.
func marker(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + strings.ToUpper(hex.EncodeToString(b[:]))
}

// SessionsIn are the sessions (disconnected ones too) whose cwd is dir.
func (w *World) SessionsIn(dir string) []Session {
	w.t.Helper()
	return inDir(w.Sessions(), dir)
}

// AgentSession is the intercom session the agent working in dir acts as:
// the one whose id holds the harness's session id, else the only one in
// dir. It fails the test when there is none.
func (w *World) AgentSession(dir, harnessID string) Session {
	w.t.Helper()
	var found []Session
	Await(w.t, msgTimeout, func() bool {
		found = w.SessionsIn(dir)
		return len(found) > 0
	}, "a session in %s", dir)
	if harnessID != "" {
		for _, s := range found {
			if strings.Contains(s.ID, harnessID) {
				return s
			}
		}
	}
	if len(found) != 1 {
		w.t.Fatalf("cannot tell the agent's session in %s among %d: %+v", dir, len(found), found)
	}
	return found[0]
}

// Pending peeks at the messages waiting for session id (nothing is
// acknowledged) and returns their texts.
func (w *World) Pending(id string) []string {
	w.t.Helper()
	var out struct {
		Messages []struct {
			Text string `json:"text"`
		} `json:"messages"`
	}
	raw := w.OK("--session", id, "--json", "inbox", "--peek")
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		w.t.Fatalf("decode inbox --peek: %v\n%s", err, raw)
	}
	texts := make([]string, len(out.Messages))
	for i, m := range out.Messages {
		texts[i] = m.Text
	}
	return texts
}

// seenOnce fails unless marker occurs exactly once in the last request of
// the agent's conversation, and at most once in every earlier one.
func seenOnce(t *testing.T, m *Model, marker, what string) {
	t.Helper()
	last := m.Last()
	if last == nil {
		t.Fatalf("%s: the model received no request", what)
	}
	for _, r := range m.Main() {
		if n := r.Count(marker); n > 1 {
			t.Errorf("%s: request %d holds %s %d times (delivered more than once)", what, r.N, marker, n)
		}
	}
	if n := last.Count(marker); n != 1 {
		t.Errorf("%s: the model's context holds %s %d times, want exactly 1", what, marker, n)
	}
}

// longBody is a message of n numbered lines of about 100 characters each.
func longBody(tag string, n int) (body string, lines []string) {
	for i := range n {
		lines = append(lines, fmt.Sprintf("%s-L%04d %s", tag, i, strings.Repeat("abcdefghij", 9)))
	}
	return strings.Join(lines, "\n"), lines
}

// seenWhole fails unless every line of a long message occurs exactly once
// in the agent's final context.
func seenWhole(t *testing.T, m *Model, lines []string) {
	t.Helper()
	last := m.Last()
	if last == nil {
		t.Fatal("the model received no request")
	}
	missing, doubled := 0, 0
	for _, l := range lines {
		switch n := last.Count(l); {
		case n == 0:
			missing++
		case n > 1:
			doubled++
		}
	}
	if missing > 0 || doubled > 0 {
		t.Errorf("long message of %d lines: %d missing, %d more than once in the model's context", len(lines), missing, doubled)
	}
}

// lastUserText is what the model was sent after its previous answer in
// request r (tool results, injected context, a new prompt).
func lastUserText(r *Request) string {
	var b strings.Builder
	walk := func(v any) { writeStrings(&b, v) }
	if msgs, ok := r.JSON["messages"].([]any); ok { // Anthropic
		for i := len(msgs) - 1; i >= 0; i-- {
			mm, _ := msgs[i].(map[string]any)
			if mm["role"] == "assistant" {
				break
			}
			walk(mm)
		}
	}
	if _, ok := r.JSON["contents"]; ok { // Gemini
		geminiLastUserText(r, &b)
	}
	if items, ok := r.JSON["input"].([]any); ok { // Responses
		for i := len(items) - 1; i >= 0; i-- {
			it, _ := items[i].(map[string]any)
			if it["type"] == "function_call" || (it["type"] == "message" && it["role"] == "assistant") {
				break
			}
			walk(it)
		}
	}
	return b.String()
}

// intercomLeftovers lists the running intercom CLI processes (brokers
// aside) of the world, but for those with the pids in keep.
func (w *World) intercomLeftovers(keep ...int) []string {
	var out []string
	for _, p := range pidsMentioning("INTERCOM_HOME=" + w.IntercomHome) {
		if slices.Contains(keep, p) {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if filepath.Base(args[0]) == "intercom" {
			out = append(out, strings.Join(args, " "))
		}
	}
	return out
}
