package agentsession

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/internal/brokertest"
	"github.com/intercom-dev/intercom/internal/proctree"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

func TestNextBinding(t *testing.T) {
	hook := func(sid string) Request {
		return Request{Harness: "claude", HarnessSession: sid, FromHook: true, Cwd: "/src/My Repo"}
	}
	b := next(Binding{}, hook("s1"), "")
	if b.Session != "cc-s1000" || b.Name != "claude-my-repo" || !b.Hooks {
		t.Fatalf("first hook: %+v", b)
	}
	if again := next(b, hook("s1"), ""); again.Session != b.Session || len(again.Seen) != 1 {
		t.Fatalf("same harness session: %+v", again)
	}
	// /clear: the same process, a new harness session: the session follows.
	cleared := next(b, hook("s2"), "")
	if cleared.Session != SessionID("claude", "s2") || strings.Join(cleared.Seen, ",") != "s1,s2" {
		t.Fatalf("after /clear: %+v", cleared)
	}
	// The MCP server's stale CLAUDE_CODE_SESSION_ID does not pull it back.
	if mcp := next(cleared, Request{Harness: "claude"}, "s1"); mcp.Session != cleared.Session {
		t.Fatalf("MCP with a stale env moved the binding: %+v", mcp)
	}
	// A binding the MCP server made before any hook is adopted by the first hook.
	early := next(Binding{}, Request{Harness: "codex", Name: "builder"}, "")
	if early.Session == "" || early.Name != "builder" || early.Hooks {
		t.Fatalf("MCP first: %+v", early)
	}
	if adopted := next(early, Request{Harness: "codex", HarnessSession: "t1", FromHook: true}, ""); adopted.Session != early.Session || adopted.Name != "builder" || !adopted.Hooks {
		t.Fatalf("hook after MCP: %+v, want the MCP's session kept", adopted)
	}
	// Claude's environment names the session before any hook ran.
	if env := next(Binding{}, Request{Harness: "claude"}, "uuid-1"); env.Session != SessionID("claude", "uuid-1") || strings.Join(env.Seen, ",") != "uuid-1" {
		t.Fatalf("from CLAUDE_CODE_SESSION_ID: %+v", env)
	}
	// Seen stays bounded.
	for i := range 40 {
		b = next(b, hook(fmt.Sprintf("s%d", i)), "")
	}
	if len(b.Seen) != 16 {
		t.Fatalf("seen grew to %d", len(b.Seen))
	}
}

func TestSessionIDAndName(t *testing.T) {
	if id := SessionID("codex", "a b/c"); id != "cx-a-b-c" {
		t.Fatalf("codex id %q", id)
	}
	if id := SessionID("claude", strings.Repeat("x", 200)); len(id) != 80 {
		t.Fatalf("long id: %d chars", len(id))
	}
	if n := DefaultName("", "/"); n != "agent" {
		t.Fatalf("name for /: %q", n)
	}
}

func TestStoreNearestAndPrune(t *testing.T) {
	s := Open(t.TempDir())
	if _, ok := s.Nearest(); ok {
		t.Fatal("a binding in an empty store")
	}
	parent, err := proctree.Get(os.Getppid())
	if err != nil {
		t.Skip("no process tree here:", err)
	}
	boot, _ := proctree.Boot()
	if err := s.Save(Binding{Session: "sess-parent", Pid: parent.Pid, Start: parent.Start, Boot: boot}); err != nil {
		t.Fatal(err)
	}
	if b, ok := s.Nearest(); !ok || b.Session != "sess-parent" {
		t.Fatalf("nearest bound ancestor: %+v %v", b, ok)
	}
	// Another boot's binding does not count.
	other := Binding{Session: "sess-other-boot", Pid: parent.Pid, Start: parent.Start, Boot: "another-boot"}
	if err := s.Save(other); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Load(parent); ok {
		t.Fatal("a binding of another boot was loaded")
	}
	// A binding of a process that ended is pruned on the next save.
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	cp, _ := proctree.Get(child.Process.Pid)
	if err := s.Save(Binding{Session: "sess-child", Pid: cp.Pid, Start: cp.Start, Boot: boot}); err != nil {
		t.Fatal(err)
	}
	if !s.StillBound(cp, "sess-child") || s.StillBound(cp, "sess-else") {
		t.Fatal("StillBound wrong while the child runs")
	}
	_ = child.Process.Kill()
	_ = child.Wait()
	if s.StillBound(cp, "sess-child") {
		t.Fatal("StillBound after the child ended")
	}
	if err := s.Save(Binding{Session: "sess-parent", Pid: parent.Pid, Start: parent.Start, Boot: boot}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.file(cp)); !os.IsNotExist(err) {
		t.Fatal("binding of an ended harness not pruned")
	}
}

func TestOneShot(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"claude", "-p", "do it"}, true},
		{[]string{"claude", "--print", "--output-format", "json", "x"}, true},
		{[]string{"claude", "-p", "--input-format", "stream-json", "--output-format", "stream-json"}, false},
		{[]string{"claude", "-p", "--input-format=stream-json"}, false},
		{[]string{"claude"}, false},
	} {
		if got := oneShot(tc.args); got != tc.want {
			t.Errorf("oneShot(%v) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

func TestSupersedeNewestWins(t *testing.T) {
	s := Open(t.TempDir())
	ctx, stop, err := s.Supersede(context.Background(), "sess-1", proctree.Proc{})
	if err != nil {
		t.Skip("no process tree here:", err)
	}
	defer stop()
	// A newer wait (another process) records itself.
	if err := os.WriteFile(filepath.Join(s.Dir(), "rewake-sess-1"), []byte("1-2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the older wait was not superseded")
	}
}

// world is an in-process broker with a temp home.
func world(t *testing.T) (string, *intercom.Client) {
	t.Helper()
	home := brokertest.Start(t)
	return home, brokertest.Connect(t, home)
}

func TestDeliverAcknowledgesOnlyWhatIsComplete(t *testing.T) {
	home, c := world(t)
	ctx := context.Background()
	agent, err := c.Attach(ctx, intercom.AttachOptions{Name: "agent", NoDeliver: true})
	if err != nil {
		t.Fatal(err)
	}
	sid := agent.ID()
	long := strings.Repeat("0123456789 abcdefghij\n", 1000) // 22,000 bytes
	peer, err := c.Attach(ctx, intercom.AttachOptions{Name: "peer", NoDeliver: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{long, "short after"} {
		if _, err := c.Send(ctx, wire.SendRequest{From: peer.ID(), To: sid, Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	s := Open(home)
	render := func(m wire.Message) string { return m.Text + "\n" }
	opts := DeliverOptions{Render: render, Limit: hookLimit}
	var got []string
	write := func(text string) error { got = append(got, text); return nil }
	// A failed write acknowledges nothing and records no part.
	if _, err := s.Deliver(ctx, c, sid, opts, func(string) error { return fmt.Errorf("pipe closed") }); err == nil {
		t.Fatal("write error not returned")
	}
	for i := 0; i < 10; i++ {
		if _, err := s.Deliver(ctx, c, sid, opts, write); err != nil {
			t.Fatal(err)
		}
		msgs, _ := c.Inbox(ctx, sid, 0)
		if len(msgs) == 0 {
			break
		}
		if strings.Contains(got[len(got)-1], "part ") && !strings.Contains(got[len(got)-1], "[end of message") && len(msgs) != 2 {
			t.Fatalf("part %d: %d messages waiting, want both (nothing acknowledged yet)", len(got), len(msgs))
		}
	}
	if len(got) < 4 || !strings.Contains(got[len(got)-1], "short after") {
		t.Fatalf("%d hand-overs, last %.100q", len(got), got[len(got)-1])
	}
	var joined strings.Builder
	for _, g := range got[:len(got)-1] {
		_, body, _ := strings.Cut(g, ":\n")
		joined.WriteString(body[:strings.LastIndex(body, "\n[")])
	}
	if joined.String() != long+"\n" {
		t.Fatalf("parts joined to %d bytes, want the whole %d", joined.Len(), len(long)+1)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), "parts-"+sid+".json")); !os.IsNotExist(err) {
		t.Fatal("part record left after the last part")
	}
}

func TestDeliverersNeverHandOverTwice(t *testing.T) {
	home, c := world(t)
	ctx := context.Background()
	agent, _ := c.Attach(ctx, intercom.AttachOptions{Name: "agent", NoDeliver: true})
	peer, _ := c.Attach(ctx, intercom.AttachOptions{Name: "peer", NoDeliver: true})
	const n = 40
	s := Open(home)
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 3 { // hooks, MCP server, rewake wait
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, _ = s.Deliver(ctx, c, agent.ID(), DeliverOptions{Render: func(m wire.Message) string { return "<" + m.Text + ">\n" }, Limit: hookLimit},
					func(text string) error {
						mu.Lock()
						defer mu.Unlock()
						for i := range n {
							if strings.Contains(text, fmt.Sprintf("<m%02d>", i)) {
								seen[fmt.Sprintf("m%02d", i)]++
							}
						}
						return nil
					})
			}
		}()
	}
	for i := range n {
		if _, err := c.Send(ctx, wire.SendRequest{From: peer.ID(), To: agent.ID(), Text: fmt.Sprintf("m%02d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		done := len(seen) == n
		mu.Unlock()
		if done || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("handed over %d of %d", len(seen), n)
	}
	for id, k := range seen {
		if k != 1 {
			t.Fatalf("%s handed over %d times", id, k)
		}
	}
}

// BoundElsewhere finds another live harness bound to the same session,
// never the one asked about, a dead one, or one bound to another session.
func TestBoundElsewhere(t *testing.T) {
	s := Open(t.TempDir())
	boot, err := proctree.Boot()
	if err != nil {
		t.Skip("no process tree here:", err)
	}
	start := func() (proctree.Proc, *exec.Cmd) {
		c := exec.Command("sleep", "60")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
		p, err := proctree.Get(c.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		return p, c
	}
	old, _ := start()
	resumed, resumedCmd := start()
	other, _ := start()
	for _, b := range []Binding{
		{Session: "sess-a", Pid: old.Pid, Start: old.Start, Boot: boot},
		{Session: "sess-a", Pid: resumed.Pid, Start: resumed.Start, Boot: boot},
		{Session: "sess-b", Pid: other.Pid, Start: other.Start, Boot: boot},
	} {
		if err := s.Save(b); err != nil {
			t.Fatal(err)
		}
	}
	if p, ok := s.BoundElsewhere(old, "sess-a"); !ok || p.Pid != resumed.Pid {
		t.Fatalf("BoundElsewhere(old, sess-a) = %+v %v, want the resumed harness %d", p, ok, resumed.Pid)
	}
	if p, ok := s.BoundElsewhere(other, "sess-b"); ok {
		t.Fatalf("BoundElsewhere(other, sess-b) found %+v: nobody else is bound to sess-b", p)
	}
	_ = resumedCmd.Process.Kill()
	_ = resumedCmd.Wait()
	if p, ok := s.BoundElsewhere(old, "sess-a"); ok {
		t.Fatalf("BoundElsewhere found the ended harness %+v", p)
	}
}
