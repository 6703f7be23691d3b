package ui

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/intercom-dev/intercom/internal/runs"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"

	"github.com/intercom-dev/intercom/internal/testenv"
)

func TestSessionListShowsPeersAndTogglesScope(t *testing.T) {
	w := newWorld(t)
	w.peer("worker", "")
	w.peer("elsewhere", t.TempDir())
	d := w.ui(nil)
	s := d.waitFor("worker")
	for _, col := range []string{"NAME", "TARGET", "STATUS", "STATE", "ASKS", "ACTIVITY", "this project"} {
		if !strings.Contains(s, col) {
			t.Errorf("session list lacks %q:\n%s", col, s)
		}
	}
	if strings.Contains(s, "elsewhere") || strings.Contains(s, "▸ alice") {
		t.Fatalf("project scope shows another project's session or itself:\n%s", s)
	}
	d.press("a")
	d.eventually("all-projects list", func(s string) bool {
		return strings.Contains(s, "all projects") && strings.Contains(s, "elsewhere") && strings.Contains(s, "worker")
	})
	d.press("a")
	d.eventually("project list again", func(s string) bool {
		return strings.Contains(s, "this project") && !strings.Contains(s, "elsewhere")
	})
	// Live: a session that appears later shows up without a key press.
	w.peer("latecomer", "")
	d.waitFor("latecomer")
}

func TestComposeSendDeliversPastedMultiline(t *testing.T) {
	w := newWorld(t)
	_, worker := w.peer("worker", "")
	d := w.ui(nil)
	d.waitFor("worker")
	d.press("enter")
	d.waitFor("[Send]")
	d.process(pasteMsg("first line\n  second line\nthird"))
	d.press("alt+enter")
	d.typ("typed")
	d.press("enter")
	d.waitFor("Sent to worker")
	m := next(t, worker)
	if want := "first line\n  second line\nthird\ntyped"; m.Text != want {
		t.Fatalf("worker got %q, want %q", m.Text, want)
	}
	if m.ExpectsReply || m.From.Name != "alice" {
		t.Fatalf("plain send arrived as %+v", m)
	}
	if strings.Contains(ansi.Strip(d.m.Screen()), "mode:") {
		t.Fatal("compose overlay still open after sending")
	}
}

func TestRequestReplySetsExpectsReply(t *testing.T) {
	w := newWorld(t)
	wc, worker := w.peer("worker", "")
	d := w.ui(nil)
	d.waitFor("worker")
	d.press("enter", "tab")
	d.waitFor("[Request Reply]")
	d.press("tab")
	d.waitFor("[Send]")
	d.press("tab")
	d.typ("ship it?")
	d.press("enter")
	d.waitFor("Asked (reply requested) worker")
	m := next(t, worker)
	if !m.ExpectsReply || m.Text != "ship it?" {
		t.Fatalf("worker got %+v, want an ask", m)
	}
	asks, err := wc.Pending(context.Background(), worker.ID())
	if err != nil || len(asks) != 1 || asks[0].AskID != m.ID {
		t.Fatalf("worker's pending asks = %+v, %v", asks, err)
	}
	// The worker's reply lands in alice's conversation with worker.
	if _, err := wc.Send(context.Background(), wire.SendRequest{From: worker.ID(), To: "alice", Text: "shipped", ReplyTo: m.ID}); err != nil {
		t.Fatal(err)
	}
	d.waitFor("2 Conversations(1)")
	d.press("alt+shift+m")
	d.waitFor("1 unread")
	d.press("enter")
	d.waitFor("shipped")
}

func TestEscCancelsCompose(t *testing.T) {
	w := newWorld(t)
	w.peer("worker", "")
	d := w.ui(nil)
	d.waitFor("worker")
	d.press("enter")
	d.typ("never mind")
	d.press("esc")
	s := d.waitFor("Cancelled")
	if strings.Contains(s, "never mind") || !strings.Contains(s, "NAME") {
		t.Fatalf("esc did not return to the list:\n%s", s)
	}
	d.press("enter")
	if strings.Contains(ansi.Strip(d.m.Screen()), "never mind") {
		t.Fatal("cancelled text came back in a new compose")
	}
}

func TestIncomingAskHighlightedAndReplyReachesAsker(t *testing.T) {
	w := newWorld(t)
	wc, worker := w.peer("worker", "")
	d := w.ui(nil)
	d.waitFor("worker")
	type result struct {
		r   intercom.AskResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := wc.Ask(context.Background(), wire.SendRequest{From: worker.ID(), To: "alice", Text: "Is 403 a re-auth trigger?"}, 30*time.Second)
		done <- result{r, err}
	}()
	s := d.waitFor("New ask from worker")
	if !strings.Contains(s, "2 Conversations(1)") {
		t.Fatalf("header lacks the unread count:\n%s", s)
	}
	d.press("alt+shift+m")
	s = d.waitFor("! ask unanswered")
	if !strings.Contains(s, "1 unread") {
		t.Fatalf("conversation list lacks unread count:\n%s", s)
	}
	d.press("enter")
	s = d.waitFor("ASK, NOT ANSWERED")
	if !strings.Contains(s, "worker** (Native") || !strings.Contains(s, "Is 403 a re-auth trigger?") || !strings.Contains(s, "press r") {
		t.Fatalf("thread does not render the ask as attach does:\n%s", s)
	}
	d.press("r")
	d.waitFor("Replying to: Is 403")
	d.typ("Yes, re-auth on 403.")
	d.press("enter")
	d.waitFor("Replied to worker")
	res := <-done
	if res.err != nil || res.r.Reply == nil || res.r.Reply.Text != "Yes, re-auth on 403." {
		t.Fatalf("asker got %+v, %v", res.r, res.err)
	}
	s = d.waitFor("ask (answered)")
	if strings.Contains(s, "ASK, NOT ANSWERED") {
		t.Fatalf("answered ask still highlighted:\n%s", s)
	}
	d.press("esc")
	d.eventually("unread cleared and ask resolved", func(s string) bool {
		return !strings.Contains(s, "unread") && !strings.Contains(s, "! ask unanswered")
	})
	// The alt+shift+m key closes the conversations view again.
	d.press("alt+shift+m")
	d.waitFor("NAME")
}

func TestAskFromBeforeStartIsRepliedFromSessionList(t *testing.T) {
	w := newWorld(t)
	wc, worker := w.peer("worker", "")
	c, alice := w.peer("alice", "")
	sent, err := wc.Send(context.Background(), wire.SendRequest{From: worker.ID(), To: "alice", Text: "old question", ExpectsReply: true})
	if err != nil {
		t.Fatal(err)
	}
	d := w.uiFor(c, alice, nil)
	d.waitFor("!0") // worker waits on us: marked in ASKS
	d.press("r")
	d.waitFor("Replying to: old question")
	d.typ("answer")
	d.press("enter")
	d.waitFor("Replied to worker")
	got := next(t, worker)
	for got.ID == sent.ID { // the ask itself is not pushed to the sender
		got = next(t, worker)
	}
	if got.ReplyTo != sent.ID || got.Text != "answer" {
		t.Fatalf("worker got %+v", got)
	}
}

func TestAttachFileByPath(t *testing.T) {
	w := newWorld(t)
	_, worker := w.peer("worker", "")
	p := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(p, []byte("attached body\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := w.ui(nil)
	d.waitFor("worker")
	d.press("enter")
	d.typ("see file")
	d.press("ctrl+a")
	d.waitFor("Attach file:")
	d.typ(filepath.Join(t.TempDir(), "missing"))
	d.press("enter")
	d.waitFor("no such file")
	d.press("esc", "ctrl+a")
	d.typ(p)
	d.press("enter")
	d.waitFor("Attachments: notes.txt (14 B)")
	d.press("enter")
	d.waitFor("Sent to worker")
	m := next(t, worker)
	if m.Text != "see file" || len(m.Attachments) != 1 || m.Attachments[0].Content != "attached body\n" || m.Attachments[0].Name != "notes.txt" {
		t.Fatalf("worker got %+v", m)
	}
}

func TestAttachmentsCollapsedAndExpanded(t *testing.T) {
	w := newWorld(t)
	wc, worker := w.peer("worker", "")
	d := w.ui(nil)
	d.waitFor("worker")
	if _, err := wc.Send(context.Background(), wire.SendRequest{From: worker.ID(), To: "alice", Text: "patch attached",
		Attachments: []wire.Attachment{{Type: "snippet", Name: "fix.go", Language: "go", Content: "package fix\n"}}}); err != nil {
		t.Fatal(err)
	}
	d.waitFor("New message from worker")
	d.press("alt+shift+m", "enter")
	s := d.waitFor("x expands")
	if strings.Contains(s, "package fix") {
		t.Fatalf("attachment not collapsed:\n%s", s)
	}
	d.press("x")
	d.waitFor("package fix")
}

func TestTopicsViewShowsHeldAndUnavailableResources(t *testing.T) {
	w := newWorld(t)
	wc, worker := w.peer("worker", "")
	if _, err := wc.Publish(context.Background(), wire.PublishRequest{From: worker.ID(), Topic: "browser/tab-4", Resource: "tab-4", Ownership: wire.OwnershipHeld, Message: "Reviewing the sign-in flow"}); err != nil {
		t.Fatal(err)
	}
	d := w.ui(nil)
	d.press("t")
	s := d.waitFor("resource tab-4: held by worker")
	if !strings.Contains(s, "Topic browser/tab-4") || !strings.Contains(s, "Reviewing the sign-in flow") {
		t.Fatalf("topics view:\n%s", s)
	}
	wc.Close() // the holder goes away: unavailable, never released
	d.waitFor("resource tab-4: unavailable by worker (holder disconnected; not released)")
}

func TestRunsViewAnswersOpenQuestion(t *testing.T) {
	w := newWorld(t)
	dir := filepath.Join(w.home, "runs")
	st := runs.Files{Dir: dir}
	r := &runs.Run{ID: "78f659a3", Agent: "scout", State: runs.StateRunning, ChildSession: "subagent-scout-78f659a3", ChildSessionID: "child1", CreatedAt: time.Now()}
	if err := st.Create(r); err != nil {
		t.Fatal(err)
	}
	if err := st.SaveQuestion(&runs.Question{ID: "q1a2b3c4d", RunID: r.ID, Agent: "scout", Reason: "need_decision", Message: "Which API version?"}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []string
	d := w.ui(func(o *Options) {
		o.RunsDir = dir
		o.Answer = func(_ context.Context, run, qid, text string) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, run, qid, text)
			return "answer saved and delivered to the waiting child", nil
		}
	})
	d.waitFor("4 Runs")
	d.press("u")
	s := d.waitFor("Which API version?")
	if !strings.Contains(s, "78f659a3") || !strings.Contains(s, "scout") {
		t.Fatalf("runs view:\n%s", s)
	}
	d.press("enter")
	d.waitFor("select an open question")
	d.press("down", "enter")
	d.waitFor("Answer question q1a2b3c4d of run 78f659a3")
	d.typ("v2")
	d.press("enter")
	d.waitFor("Answered question q1a2b3c4d of run 78f659a3")
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(got, "|") != "78f659a3|q1a2b3c4d|v2" {
		t.Fatalf("answer called with %q", got)
	}
}

func TestRunsViewShowsAnswerError(t *testing.T) {
	w := newWorld(t)
	dir := filepath.Join(w.home, "runs")
	st := runs.Files{Dir: dir}
	r := &runs.Run{ID: "aa11bb22", Agent: "scout", State: runs.StateRunning, ChildSession: "c", ChildSessionID: "c", CreatedAt: time.Now()}
	if err := st.Create(r); err != nil {
		t.Fatal(err)
	}
	if err := st.SaveQuestion(&runs.Question{ID: "q00000001", RunID: r.ID, Message: "?"}); err != nil {
		t.Fatal(err)
	}
	d := w.ui(func(o *Options) {
		o.RunsDir = dir
		o.Answer = func(context.Context, string, string, string) (string, error) {
			return "", errors.New("conflicting answer refused")
		}
	})
	d.press("u")
	d.waitFor("q00000001")
	d.press("down", "enter")
	d.typ("x")
	d.press("enter")
	s := d.waitFor("conflicting answer refused")
	if !strings.Contains(s, "Answer question") {
		t.Fatalf("compose closed after a failed answer:\n%s", s)
	}
}

func TestShortcutIsConfigurable(t *testing.T) {
	w := newWorld(t)
	d := w.ui(func(o *Options) { o.Shortcut = "ctrl+k" })
	d.waitFor("NAME")
	d.press("alt+shift+m")
	if strings.Contains(ansi.Strip(d.m.Screen()), "[2 Conversations") {
		t.Fatal("default key opened conversations although shortcut is ctrl+k")
	}
	d.press("ctrl+k")
	d.waitFor("[2 Conversations]")
	d.press("ctrl+k")
	d.waitFor("[1 Sessions]")
}

// screens visits every view with content in it.
func screens(t *testing.T, noColor bool) map[string]string {
	w := newWorld(t)
	wc, worker := w.peer("worker-with-a-very-long-session-name-indeed", "")
	for i := 0; i < 30; i++ {
		w.peer("p"+string(rune('a'+i%26))+string(rune('a'+i/26)), "")
	}
	long := strings.Repeat("a long line of text that goes on ", 20)
	if _, err := wc.Publish(context.Background(), wire.PublishRequest{From: worker.ID(), Topic: "t/x", Resource: "r", Ownership: wire.OwnershipHeld, Message: long}); err != nil {
		t.Fatal(err)
	}
	d := w.ui(func(o *Options) { o.NoColor = noColor })
	if _, err := wc.Send(context.Background(), wire.SendRequest{From: worker.ID(), To: "alice", Text: long + "\n" + strings.Repeat("line\n", 40), ExpectsReply: true}); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	d.waitFor("paa")
	d.waitFor("New ask")
	out["sessions"] = d.m.Screen()
	d.press("alt+shift+m")
	d.waitFor("ask unanswered")
	out["conversations"] = d.m.Screen()
	d.press("enter")
	d.waitFor("NOT ANSWERED")
	out["thread"] = d.m.Screen()
	d.press("r")
	d.process(pasteMsg(strings.Repeat("pasted\n", 50)))
	d.waitFor("Replying to")
	out["compose"] = d.m.Screen()
	d.press("esc", "t")
	d.waitFor("Topic t/x")
	out["topics"] = d.m.Screen()
	return out
}

func TestNoColorOutputHasNoEscapes(t *testing.T) {
	for name, s := range screens(t, true) {
		if strings.Contains(s, "\x1b") {
			t.Errorf("%s view has escape sequences with NO_COLOR:\n%q", name, s)
		}
	}
	// And colour is really there without NO_COLOR (the check above means something).
	if s := screens(t, false)["sessions"]; !strings.Contains(s, "\x1b[") {
		t.Errorf("no styling without NO_COLOR:\n%q", s)
	}
}

func TestRendersWithin80x24(t *testing.T) {
	for name, s := range screens(t, false) {
		lines := strings.Split(s, "\n")
		if len(lines) > 24 {
			t.Errorf("%s view has %d lines", name, len(lines))
		}
		for i, l := range lines {
			if wd := ansi.StringWidth(l); wd > 80 {
				t.Errorf("%s view line %d is %d wide: %q", name, i, wd, ansi.Strip(l))
			}
		}
	}
}

func TestCanonicalKey(t *testing.T) {
	for in, want := range map[string]string{
		"alt+shift+m": "alt+shift+m", "shift+alt+m": "alt+shift+m", "Alt+M": "alt+shift+m",
		"option+shift+m": "alt+shift+m", "ctrl+shift+k": "ctrl+shift+k", "enter": "enter", "A": "shift+a",
	} {
		if got := canonicalKey(in); got != want {
			t.Errorf("canonicalKey(%q) = %q, want %q", in, got, want)
		}
	}
	if !is(keyMsg("alt+shift+m"), "alt+shift+m") {
		t.Error("ESC M is not alt+shift+m")
	}
}

func TestAttachIsBounded(t *testing.T) {
	sparse := testenv.SparseFile(t, 10<<30)
	var c compose
	for p, want := range map[string]string{sparse: "is 10737418240 bytes; max 1048576", "/dev/zero": "/dev/zero is over 1048576 bytes"} {
		if err := c.attach(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("attach %s: %v, want %q", p, err, want)
		}
	}
	if len(c.atts) != 0 {
		t.Errorf("attached %d files", len(c.atts))
	}
}
