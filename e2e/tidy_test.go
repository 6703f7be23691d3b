package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/internal/runs"
)

// TestSessionsThatNeverHeldMailAreForgotten: sessions that are gone and
// never held a message (a killed holder, a finished run's child) are
// forgotten after forgetAfterMs, and an MCP health check registers none; a session with queued
// mail, and one that ever received mail, are kept; a UI that cannot start
// registers nothing.
func TestSessionsThatNeverHeldMailAreForgotten(t *testing.T) {
	t.Parallel()
	h := rsH(t)
	h.WriteConfig(`{"forgetAfterMs": 5000}`) // long enough for the steps below to run first, even under -race
	sup, _ := h.Attach("--name", "sup")
	keeper, _ := h.Attach("--name", "keeper")
	reader, _ := h.Attach("--name", "reader")
	ghost, _ := h.Attach("--name", "ghost")
	h.OK("--session", "sup", "send", "reader", "read me")
	reader.Event(20 * time.Second) // delivered and acknowledged
	for _, p := range []*Proc{keeper, reader, ghost} {
		p.Kill()
	}
	Eventually(t, 20*time.Second, func() bool {
		r := Row(h.Sessions("--all"), "keeper")
		return r != nil && r["connected"] == false
	}, "keeper to disconnect")
	h.OK("--session", "sup", "send", "keeper", "queued while offline")
	h.RunIn(h.Cwd, "", "mcp", "--name", "healthcheck") // stdin at EOF: a health check
	if res := h.Run("ui", "--name", "ui-user"); res.Code != 2 || !strings.Contains(res.Stderr, "needs a terminal") {
		t.Errorf("ui without a terminal: exit %d, stderr %q", res.Code, res.Stderr)
	}
	var started struct {
		RunID string `json:"run_id"`
	}
	rsJSON(t, h, &started, "--supervisor", "sup", "start", "--agent", "quick", "--", "/bin/sh", "-c", "true")
	id := started.RunID
	rsAwaitRun(t, h, id, "run to finish", func(r *runs.Run) bool { return r.Finished() })
	sup.Event(20 * time.Second) // its completion notice
	Eventually(t, 30*time.Second, func() bool {
		rows := h.Sessions("--all", "--scope", "all")
		return Row(rows, "ghost") == nil && Row(rows, "healthcheck") == nil && Row(rows, "subagent-quick-"+id) == nil
	}, "the sessions that never held mail to be forgotten")
	rows := h.Sessions("--all", "--scope", "all")
	if Row(rows, "keeper") == nil || Row(rows, "reader") == nil || Row(rows, "sup") == nil {
		t.Fatalf("kept sessions missing: %v", rows)
	}
	if Row(rows, "ui-user") != nil {
		t.Fatalf("the failed ui left a session: %v", rows)
	}
	// The MCP server registers on its first tool call (docs/agents.md), so
	// a health check registers nothing; a failed ui neither.
	if data, _ := os.ReadFile(h.Layout.BrokerLog()); strings.Contains(string(data), "name=healthcheck") || strings.Contains(string(data), "name=ui-user") {
		t.Errorf("broker log: want neither the health check nor ui-user registered:\n%s", tail(string(data), 30))
	}
	if res := h.OK("--session", "keeper", "inbox"); !strings.Contains(res, "queued while offline") {
		t.Fatalf("keeper's queued mail: %q", res)
	}
}

// TestBrokerRemovesItsSocketDirectory: a broker that exits removes its
// private socket directory (none piles up under /tmp); the next command
// starts a broker that makes it again.
func TestBrokerRemovesItsSocketDirectory(t *testing.T) {
	t.Parallel()
	h := newH(t)
	h.WriteConfig(`{"idleExitMs": 100}`)
	h.OK("list")
	if _, err := os.Stat(h.Layout.SocketDir()); err != nil {
		t.Fatalf("socket dir while the broker runs: %v", err)
	}
	Eventually(t, 20*time.Second, func() bool { return len(h.BrokerPids()) == 0 }, "the broker to idle out")
	if _, err := os.Stat(h.Layout.SocketDir()); !os.IsNotExist(err) {
		t.Fatalf("socket dir %s after the broker exited: %v, want it removed", h.Layout.SocketDir(), err)
	}
	h.OK("list")
}

// TestHomeUnderMissingParentRefused: an explicit --home (or INTERCOM_HOME)
// whose parent does not exist is a clear error; nothing is created.
func TestHomeUnderMissingParentRefused(t *testing.T) {
	t.Parallel()
	h := newH(t)
	missing := filepath.Join(t.TempDir(), "nonexistent")
	home := filepath.Join(missing, "dir", "x")
	for _, res := range []Result{h.Run("--home", home, "list"), h.Runs("--home", home, "list")} {
		if res.Code != 2 || !strings.Contains(res.Stderr, "does not exist") || strings.Count(res.Stderr, "\n") != 1 {
			t.Errorf("--home under a missing parent: exit %d, stderr %q", res.Code, res.Stderr)
		}
	}
	h.Env = append(h.Env, "INTERCOM_HOME="+home)
	if res := h.Run("list"); res.Code != 2 || !strings.Contains(res.Stderr, "does not exist") {
		t.Errorf("INTERCOM_HOME under a missing parent: exit %d, stderr %q", res.Code, res.Stderr)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("%s was created: %v", missing, err)
	}
}

// TestSocketMismatchAdvice: `--socket OTHER` against a healthy broker says
// which socket it serves, not that it is unhealthy and should be killed.
func TestSocketMismatchAdvice(t *testing.T) {
	t.Parallel()
	h := newH(t)
	h.Attach("--name", "worker")
	other := filepath.Join(t.TempDir(), "other.sock")
	res := h.Run("--socket", other, "list")
	if res.Code != 1 || !strings.Contains(res.Stderr, "is healthy but serves socket "+h.Layout.Socket) ||
		strings.Contains(res.Stderr, "kill") || strings.Count(res.Stderr, "\n") != 1 {
		t.Fatalf("socket mismatch: exit %d, stderr %q", res.Code, res.Stderr)
	}
	if out := h.OK("--socket", h.Layout.Socket, "list"); !strings.Contains(out, "worker") {
		t.Fatalf("the advised socket: %q", out)
	}
}

// TestAttachResumeByName: --resume takes a name like every other target and
// gets the session's undelivered messages back.
func TestAttachResumeByName(t *testing.T) {
	t.Parallel()
	h := newH(t)
	w, ev := h.Attach("--name", "worker")
	w.Kill()
	Eventually(t, 20*time.Second, func() bool { r := Row(h.Sessions("--all"), "worker"); return r != nil && r["connected"] == false }, "worker to disconnect")
	h.OK("send", "worker", "while you were away")
	w2, ev2 := h.Attach("--resume", "worker")
	if ev2["id"] != ev["id"] || ev2["resumed"] != true {
		t.Fatalf("resume by name: %v, want id %v resumed", ev2, ev["id"])
	}
	if m := w2.Event(20 * time.Second); m["text"] != "while you were away" {
		t.Fatalf("resumed session got %v", m)
	}
	if res := h.Run("attach", "--resume", "nobody"); res.Code != 1 || !strings.Contains(res.Stderr, `"nobody"`) {
		t.Fatalf("resume of an unknown name: exit %d, stderr %q", res.Code, res.Stderr)
	}
}
