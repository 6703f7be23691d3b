package hooks

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/intercom-dev/intercom/internal/hookclient"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// hookCounting is hook that also returns how many broker requests (NATS
// messages the hook's client published) the call made.
func (a *agent) hookCounting(harness, event, stdin string) (string, string, uint64) {
	var out, errb bytes.Buffer
	var c *hookclient.Client
	Run(context.Background(), Call{Harness: harness, Event: event}, Env{
		Connect: func(bool) (Client, error) {
			var err error
			if c, err = hookclient.Connect(context.Background(), hookclient.Options{Home: a.home, NoSpawn: true}); err != nil {
				return nil, err
			}
			return c, nil
		},
		Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb,
	})
	if c == nil {
		a.t.Fatalf("hook %s %s never connected (stderr %q)", harness, event, errb.String())
	}
	return out.String(), errb.String(), c.Requests()
}

// A hook of a held session makes one broker request when nothing waits
// (the state report and the fetch together), and one more, the
// acknowledgement, when it hands something over.
func TestHookIsOneBrokerRequest(t *testing.T) {
	a := newAgent(t, "claude", "b1")
	post := `{"session_id":"b1","hook_event_name":"PostToolUse","tool_name":"Bash","cwd":"/src"}`
	out, errs, n := a.hookCounting("claude", "PostToolUse", post)
	if out != "" || errs != "" || n != 1 {
		t.Fatalf("PostToolUse with nothing waiting: stdout %q, stderr %q, %d requests; want nothing and 1 request", out, errs, n)
	}
	if s := a.status(); s != "tool:Bash" {
		t.Fatalf("state %q, want tool:Bash", s)
	}
	a.send("note one", wire.DeliverySteer)
	a.send("note two", wire.DeliverySteer)
	out, errs, n = a.hookCounting("claude", "PostToolUse", post)
	if strings.Count(out, "note one") != 1 || strings.Count(out, "note two") != 1 || errs != "" || n != 2 {
		t.Fatalf("PostToolUse with two waiting: stdout %q, stderr %q, %d requests; want both once and 2 requests", out, errs, n)
	}
	if out, _, n = a.hookCounting("claude", "PostToolUse", post); out != "" || n != 1 {
		t.Fatalf("the next PostToolUse: stdout %q, %d requests; want nothing again and 1 request", out, n)
	}
	stop := `{"session_id":"b1","hook_event_name":"Stop"}`
	if out, errs, n = a.hookCounting("claude", "Stop", stop); out != "" || errs != "" || n != 1 {
		t.Fatalf("Stop with nothing waiting: stdout %q, stderr %q, %d requests", out, errs, n)
	}
	if s := a.status(); s != "idle" {
		t.Fatalf("state %q after Stop, want idle", s)
	}
}
