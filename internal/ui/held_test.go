package ui

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intercom-dev/intercom/internal/brokertest"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// TestHeldViewApprovesAndRefuses: alice holds inbound messages; an
// agent's two messages show in the Held tab; a approves the first (it
// reaches alice's conversation) and x refuses the second (trace says
// refused). The test process is the person at the keyboard; the sender is
// made an agent's by a harness binding naming its session.
func TestHeldViewApprovesAndRefuses(t *testing.T) {
	root := t.TempDir()
	proj := filepath.Join(root, "proj")
	if err := os.MkdirAll(proj, 0o700); err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, home: brokertest.StartConfigured(t, `{"inbound":{"alice":"hold"}}`), proj: proj}
	c, agent := w.peer("worker", "")
	data, _ := json.Marshal(map[string]string{"session": agent.ID()})
	if err := os.MkdirAll(filepath.Join(w.home, "agents"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.home, "agents", "binding-worker.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	d := w.ui(nil)
	d.waitFor("worker")
	if rows, err := c.List(context.Background(), intercom.ListOptions{Scope: "all"}); err != nil {
		t.Fatal(err)
	} else if r := findRow(rows, "alice"); r == nil || !r.Person {
		t.Skip("the test process runs under an agent harness: the UI cannot act as a person")
	}
	var ids []string
	for _, text := range []string{"first please", "second please"} {
		res, err := c.Send(context.Background(), wire.SendRequest{From: agent.ID(), To: "alice", Text: text})
		if err != nil || !res.Held {
			t.Fatalf("send %q: %+v, %v (want held)", text, res, err)
		}
		ids = append(ids, res.ID)
	}
	d.waitFor("5 Held(2)")
	d.press("5")
	s := d.waitFor("second please")
	if !strings.Contains(s, "first please") || !strings.Contains(s, "worker → alice") {
		t.Fatalf("held view:\n%s", s)
	}
	d.press("a")
	d.waitFor("approved")
	d.press("2", "enter")
	d.waitFor("first please") // delivered: in the conversation with worker
	d.press("5")
	d.eventually("the first gone from the held list", func(s string) bool {
		return !strings.Contains(s, "first please") && strings.Contains(s, "second please")
	})
	d.press("x")
	d.waitFor("refused")
	d.eventually("none held", func(s string) bool { return strings.Contains(s, "(none held)") })
	tr, err := c.Trace(context.Background(), ids[1])
	if err != nil || tr.State != wire.TraceRefused {
		t.Fatalf("trace of the refused message: %+v, %v", tr, err)
	}
	if tr, err := c.Trace(context.Background(), ids[0]); err != nil || tr.Decision != wire.DecisionApproved {
		t.Fatalf("trace of the approved message: %+v, %v", tr, err)
	}
}

func findRow(rows []wire.Session, name string) *wire.Session {
	for i := range rows {
		if rows[i].Name == name {
			return &rows[i]
		}
	}
	return nil
}
