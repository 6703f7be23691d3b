package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpSession starts `intercom mcp` for h over a real stdio pipe and returns
// a connected SDK client session.
func mcpSession(t *testing.T, h *H, name string, extraEnv ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "intercom"), "mcp", "--name", name)
	cmd.Env = append(os.Environ(), "INTERCOM_HOME="+h.Home, "INTERCOM_SESSION=", "INTERCOM_SOCKET=",
		"INTERCOM_SUPERVISOR=", "INTERCOM_RUN_ID=", "INTERCOM_CHILD_AGENT=", "INTERCOM_CHILD_INDEX=",
		"PI_SUBAGENT_ORCHESTRATOR_TARGET=", "PI_SUBAGENT_RUN_ID=", "PI_SUBAGENT_CHILD_AGENT=", "PI_SUBAGENT_CHILD_INDEX=")
	cmd.Env = append(cmd.Env, extraEnv...)
	cmd.Dir = h.Cwd
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect MCP %s: %v", name, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func callTool(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (string, map[string]any, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("call %s %v: %v", tool, args, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	var structured map[string]any
	if res.StructuredContent != nil {
		data, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(data, &structured)
	}
	return text.String(), structured, res.IsError
}

func toolNames(t *testing.T, cs *mcp.ClientSession) map[string]bool {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("list tools: %v", err)
	}
	out := map[string]bool{}
	for _, tl := range res.Tools {
		out[tl.Name] = true
	}
	return out
}

func TestMCPSendAskReplyBetweenSessions(t *testing.T) {
	t.Parallel()
	h := newH(t)
	alice := mcpSession(t, h, "alice")
	bob := mcpSession(t, h, "bob")
	if names := toolNames(t, alice); !names["intercom"] || names["contact_supervisor"] {
		t.Fatalf("tools %v: want intercom and no contact_supervisor outside a child", names)
	}
	// Nothing is registered before a tool call; bob's first call registers it.
	if rows := allSessions(h); len(rows) != 0 {
		t.Fatalf("sessions before any tool call: %v", rows)
	}
	callTool(t, bob, "intercom", map[string]any{"action": "status"})
	if text, _, _ := callTool(t, alice, "intercom", map[string]any{"action": "list"}); !strings.Contains(text, "bob") {
		t.Fatalf("bob not in alice's list: %s", text)
	}

	text, out, isErr := callTool(t, alice, "intercom", map[string]any{"action": "send", "to": "bob", "message": "hello bob"})
	if isErr || !strings.Contains(text, "Message sent to bob (id m") {
		t.Fatalf("send: %s", text)
	}
	// The model reads whatever the harness forwards: structuredContent if
	// there is one. There is none, so it is the full text.
	if out != nil {
		t.Fatalf("send result has structuredContent %v", out)
	}
	// bob's next tool result carries the message, once.
	var got string
	Eventually(t, 10*time.Second, func() bool {
		text, _, _ := callTool(t, bob, "intercom", map[string]any{"action": "pending"})
		got += text
		return strings.Contains(got, "hello bob")
	}, "message in bob's tool result")
	if n := strings.Count(got, "hello bob"); n != 1 {
		t.Fatalf("message shown %d times, want 1:\n%s", n, got)
	}
	text, _, _ = callTool(t, bob, "intercom", map[string]any{"action": "status"})
	if strings.Contains(text, "hello bob") {
		t.Fatalf("message delivered twice: %s", text)
	}

	// alice asks; bob replies through the tool; alice's ask returns the reply.
	done := make(chan string, 1)
	go func() {
		text, _, _ := callTool(t, alice, "intercom", map[string]any{"action": "ask", "to": "bob", "message": "ship it?", "delivery": "steer"})
		done <- text
	}()
	Eventually(t, 15*time.Second, func() bool {
		text, _, _ := callTool(t, bob, "intercom", map[string]any{"action": "pending"})
		return strings.Contains(text, "ship it?")
	}, "ask pending at bob")
	text, _, isErr = callTool(t, bob, "intercom", map[string]any{"action": "reply", "message": "yes, ship"})
	if isErr {
		t.Fatalf("reply: %s", text)
	}
	select {
	case text := <-done:
		if !strings.Contains(text, "yes, ship") {
			t.Fatalf("ask result %q, want the reply", text)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ask did not return")
	}

	// Validation as the reference: passive ask, replace without thread.
	if text, _, isErr := callTool(t, alice, "intercom", map[string]any{"action": "ask", "to": "bob", "message": "x", "delivery": "passive"}); !isErr || !strings.Contains(text, "passive") {
		t.Fatalf("passive ask: %q err=%v", text, isErr)
	}
	if text, _, isErr := callTool(t, alice, "intercom", map[string]any{"action": "send", "to": "bob", "message": "x", "delivery": "queue", "queueMode": "replace"}); !isErr || !strings.Contains(text, "threadId") {
		t.Fatalf("replace without thread: %q err=%v", text, isErr)
	}
}

// TestMCPReplyPicksAnAskLikeTheCLI: the tool's reply picks one of several
// pending asks by the same rule as `intercom reply --to` (package presence):
// by the asker's session id prefix, or its name; none named is refused with
// the candidates.
func TestMCPReplyPicksAnAskLikeTheCLI(t *testing.T) {
	t.Parallel()
	h := newH(t)
	bob := mcpSession(t, h, "bob")
	callTool(t, bob, "intercom", map[string]any{"action": "status"}) // registers bob (busy: asks must steer)
	_, carol := h.Attach("--name", "carol")
	h.Attach("--name", "dave")
	fromCarol := h.Start("--session", "carol", "ask", "bob", "question from carol", "--delivery", "steer", "--timeout", "60s")
	fromDave := h.Start("--session", "dave", "ask", "bob", "question from dave", "--delivery", "steer", "--timeout", "60s")
	Eventually(t, 15*time.Second, func() bool {
		text, _, _ := callTool(t, bob, "intercom", map[string]any{"action": "pending"})
		return strings.Contains(text, "question from carol") && strings.Contains(text, "question from dave")
	}, "both asks pending at bob")
	text, _, isErr := callTool(t, bob, "intercom", map[string]any{"action": "reply", "message": "which?"})
	if !isErr || !strings.Contains(text, "Multiple pending asks") || !strings.Contains(text, "from carol") || !strings.Contains(text, "from dave") {
		t.Fatalf("reply with two asks pending and no to: %q (error %v), want the candidates", text, isErr)
	}
	prefix := msgStr(carol["id"])[:8]
	if text, _, isErr := callTool(t, bob, "intercom", map[string]any{"action": "reply", "to": prefix, "message": "answer for carol"}); isErr {
		t.Fatalf("reply to carol's id prefix %s: %s", prefix, text)
	}
	if out, code := msgExit(t, fromCarol); code != 0 || !strings.Contains(out, "answer for carol") {
		t.Fatalf("carol's ask: exit %d, %q", code, out)
	}
	select {
	case <-fromDave.Done():
		t.Fatalf("dave's ask ended before its answer; stderr %q", fromDave.Stderr())
	default:
	}
	if text, _, isErr := callTool(t, bob, "intercom", map[string]any{"action": "reply", "to": "DAVE", "message": "answer for dave"}); isErr {
		t.Fatalf("reply to dave by name: %s", text)
	}
	if out, code := msgExit(t, fromDave); code != 0 || !strings.Contains(out, "answer for dave") || strings.Contains(out, "carol") {
		t.Fatalf("dave's ask: exit %d, %q", code, out)
	}
}

func TestMCPContactSupervisorOnlyInChild(t *testing.T) {
	t.Parallel()
	h := newH(t)
	sup, ev := h.Attach("--name", "sup")
	child := mcpSession(t, h, "kid", "INTERCOM_SUPERVISOR="+ev["id"].(string), "INTERCOM_RUN_ID=r1234567",
		"INTERCOM_CHILD_AGENT=worker", "INTERCOM_CHILD_INDEX=0")
	if names := toolNames(t, child); !names["contact_supervisor"] || !names["intercom"] {
		t.Fatalf("child tools %v: want intercom and contact_supervisor", names)
	}
	text, _, isErr := callTool(t, child, "contact_supervisor", map[string]any{"reason": "progress_update", "message": "halfway there"})
	if isErr || !strings.Contains(text, "accepted") {
		t.Fatalf("progress update: %q", text)
	}
	// The supervisor is idle, so the queued progress update reaches it.
	m := sup.Event(20 * time.Second)
	if !strings.Contains(m["text"].(string), "Subagent progress update.") || !strings.Contains(m["text"].(string), "halfway there") {
		t.Fatalf("supervisor got %v", m)
	}
}

// TestMCPReservationActions drives the intercom tool's reserve, release and
// reservations actions between two MCP sessions in one project.
func TestMCPReservationActions(t *testing.T) {
	t.Parallel()
	h := newH(t)
	alice := mcpSession(t, h, "alice")
	bob := mcpSession(t, h, "bob")
	text, _, isErr := callTool(t, alice, "intercom", map[string]any{"action": "reserve", "paths": []string{"src/a.go"}, "reason": "refactoring a", "ttl": "10m"})
	if isErr || !strings.Contains(text, "Reserved src/a.go (token ") {
		t.Fatalf("alice reserve: %q (error %v)", text, isErr)
	}
	text, _, isErr = callTool(t, bob, "intercom", map[string]any{"action": "reserve", "paths": []string{"src/a.go"}})
	if isErr || !strings.Contains(text, "Not reserved") || !strings.Contains(text, "alice") || !strings.Contains(text, "refactoring a") {
		t.Fatalf("bob's conflicting reserve: %q (error %v): want a refusal naming alice and her reason", text, isErr)
	}
	text, _, isErr = callTool(t, bob, "intercom", map[string]any{"action": "reservations"})
	if isErr || !strings.Contains(text, "src/a.go") || !strings.Contains(text, "alice") {
		t.Fatalf("bob's reservations: %q (error %v): want alice's lease on src/a.go", text, isErr)
	}
	if text, _, isErr = callTool(t, alice, "intercom", map[string]any{"action": "release"}); !isErr || !strings.Contains(text, "release needs paths or all") {
		t.Fatalf("release with nothing named: %q (error %v): want a refusal", text, isErr)
	}
	if text, _, isErr = callTool(t, alice, "intercom", map[string]any{"action": "release", "paths": []string{"src/a.go"}}); isErr || !strings.Contains(text, "src/a.go") {
		t.Fatalf("alice release: %q (error %v)", text, isErr)
	}
	text, _, isErr = callTool(t, bob, "intercom", map[string]any{"action": "reserve", "paths": []string{"src/a.go"}})
	if isErr || !strings.Contains(text, "Reserved src/a.go (token ") {
		t.Fatalf("bob reserve after alice released: %q (error %v)", text, isErr)
	}
}
