package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/internal/agentsession"
	"github.com/intercom-dev/intercom/internal/brokertest"
	"github.com/intercom-dev/intercom/internal/hookclient"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// agent is a harness (this test process) whose session is connected
// already, as its holder keeps it, so Join starts no holder; peer sends
// to it.
type agent struct {
	t       *testing.T
	home    string
	c       *intercom.Client
	session string
	peer    string
}

func newAgent(t *testing.T, harness, harnessSession string) *agent {
	t.Setenv("INTERCOM_HARNESS_PID", strconv.Itoa(os.Getpid()))
	t.Setenv("INTERCOM_NAME", "")
	t.Setenv(agentsession.ClaudeSessionEnv, "")
	home := brokertest.Start(t)
	c := brokertest.Connect(t, home)
	ctx := context.Background()
	sid := agentsession.SessionID(harness, harnessSession)
	if _, err := c.Attach(ctx, intercom.AttachOptions{RequestID: sid, Name: "agent", NoDeliver: true}); err != nil {
		t.Fatal(err)
	}
	peer, err := c.Attach(ctx, intercom.AttachOptions{Name: "peer", NoDeliver: true})
	if err != nil {
		t.Fatal(err)
	}
	return &agent{t: t, home: home, c: c, session: sid, peer: peer.ID()}
}

func (a *agent) send(text, delivery string) {
	a.t.Helper()
	if _, err := a.c.Send(context.Background(), wire.SendRequest{From: a.peer, To: a.session, Text: text, Delivery: delivery}); err != nil {
		a.t.Fatal(err)
	}
}

// hook runs one hook call with stdin and returns its stdout and stderr.
func (a *agent) hook(harness, event, stdin string) (string, string) {
	return a.hookHolding(harness, event, stdin, 0)
}

// hookHolding is hook with --hold.
func (a *agent) hookHolding(harness, event, stdin string, hold time.Duration) (string, string) {
	var out, errb bytes.Buffer
	Run(context.Background(), Call{Harness: harness, Event: event, Hold: hold}, Env{
		Connect: func(bool) (Client, error) { // the hook closes it
			c, err := hookclient.Connect(context.Background(), hookclient.Options{Home: a.home, NoSpawn: true})
			if err != nil {
				return nil, err
			}
			return c, nil
		},
		Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb,
	})
	return out.String(), errb.String()
}

// status is the state the session reported last.
func (a *agent) status() string {
	a.t.Helper()
	rows, err := a.c.List(context.Background(), intercom.ListOptions{Scope: "all", ID: a.session})
	if err != nil || len(rows) != 1 {
		a.t.Fatalf("list %s: %v, %d rows", a.session, err, len(rows))
	}
	return rows[0].Status // what the hook reported (State is idle or busy)
}

func TestRunPostToolUseHandsOverOnce(t *testing.T) {
	a := newAgent(t, "claude", "h1")
	a.send("first note", wire.DeliverySteer)
	in := `{"session_id":"h1","hook_event_name":"PostToolUse","tool_name":"run shell","cwd":"/src"}`
	out, errs := a.hook("claude", "PostToolUse", in)
	var got struct {
		HookSpecificOutput struct{ HookEventName, AdditionalContext string }
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || errs != "" {
		t.Fatalf("answer %q (stderr %q): %v", out, errs, err)
	}
	if got.HookSpecificOutput.HookEventName != "PostToolUse" || !strings.Contains(got.HookSpecificOutput.AdditionalContext, "first note") {
		t.Fatalf("answer %+v: want the message as PostToolUse context", got)
	}
	if s := a.status(); s != "tool:run_shell" {
		t.Fatalf("state %q, want tool:run_shell", s)
	}
	if out, errs := a.hook("claude", "PostToolUse", in); out != "" || errs != "" {
		t.Fatalf("second hook answered %q (stderr %q): the message was handed over already", out, errs)
	}
}

func TestRunStopBlocksOnlyForWakingMessages(t *testing.T) {
	a := newAgent(t, "codex", "h2") // codex blocks the stop; claude continues it (StopOutput)
	stop := `{"session_id":"h2","hook_event_name":"Stop"}`
	a.send("a passive note", wire.DeliveryPassive)
	if out, errs := a.hook("codex", "Stop", stop); out != "" || errs != "" {
		t.Fatalf("Stop with only a passive message answered %q (stderr %q)", out, errs)
	}
	if s := a.status(); s != "idle" {
		t.Fatalf("state %q after a Stop that did not block, want idle", s)
	}
	a.send("wake up", wire.DeliverySteer)
	out, _ := a.hook("codex", "Stop", stop)
	var got struct{ Decision, Reason string }
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.Decision != "block" || !strings.Contains(got.Reason, "wake up") || strings.Contains(got.Reason, "a passive note") {
		t.Fatalf("Stop answered %q: want a block with the waking message alone", out)
	}
	if s := a.status(); s != "thinking" {
		t.Fatalf("state %q after a blocking Stop, want thinking", s)
	}
	// A turn we continued (stop_hook_active) is not continued again for a
	// new message: only for the rest of one in parts.
	a.send("another", wire.DeliverySteer)
	if out, _ := a.hook("codex", "Stop", `{"session_id":"h2","hook_event_name":"Stop","stop_hook_active":true}`); out != "" {
		t.Fatalf("a continued turn was blocked again: %q", out)
	}
}

func TestRunSessionStartIntroduces(t *testing.T) {
	a := newAgent(t, "claude", "h3")
	out, errs := a.hook("claude", "SessionStart", `{"session_id":"h3","hook_event_name":"SessionStart","source":"startup"}`)
	if !strings.Contains(out, a.session) || !strings.Contains(out, "SessionStart") || errs != "" {
		t.Fatalf("SessionStart answered %q (stderr %q): want the intro naming %s", out, errs, a.session)
	}
}

func TestRunNeverFailsAndGeminiAlwaysAnswers(t *testing.T) {
	a := newAgent(t, "gemini", "g1")
	for _, tc := range []struct{ harness, event, stdin, out, err string }{
		{"gemini", "AfterTool", "", "{}\n", "intercom hook gemini AfterTool: hook input is empty"},
		{"claude", "PostToolUse", "not json", "", "intercom hook claude PostToolUse: hook input is not JSON"},
		{"claude", "PreCompact", "{}", "", "unknown hook event"},
		{"gemini", "AfterTool", `{"session_id":"g1","hook_event_name":"AfterTool","tool_name":"read_file"}`, "{}\n", ""},
	} {
		out, errs := a.hook(tc.harness, tc.event, tc.stdin)
		if out != tc.out || !strings.Contains(errs, tc.err) || (tc.err == "" && errs != "") || strings.Count(errs, "\n") > 1 {
			t.Errorf("%s %s %q: stdout %q, stderr %q; want %q and one line about %q", tc.harness, tc.event, tc.stdin, out, errs, tc.out, tc.err)
		}
	}
}

func TestRunStopHoldsForAWakingMessage(t *testing.T) {
	a := newAgent(t, "gemini", "g2")
	stop := `{"session_id":"g2","hook_event_name":"AfterAgent"}`
	// Nothing comes: the hold ends with the empty answer.
	if out, errs := a.hookHolding("gemini", "AfterAgent", stop, 100*time.Millisecond); out != "{}\n" || errs != "" {
		t.Fatalf("a hold that nothing woke answered %q (stderr %q)", out, errs)
	}
	// A message sent while the hook holds (or just before) continues the turn.
	done := make(chan string, 1)
	go func() {
		out, _ := a.hookHolding("gemini", "AfterAgent", stop, time.Minute)
		done <- out
	}()
	a.send("late news", wire.DeliverySteer)
	out := <-done
	var got struct{ Decision, Reason string }
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.Decision != "block" || !strings.Contains(got.Reason, "late news") {
		t.Fatalf("the held AfterAgent answered %q: want a block with the message", out)
	}
}
