package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// Reservations (docs/reservations.md): leases on project paths with
// fencing tokens, through the real broker binary and the intercom CLI.

// resvReserve runs `reserve --json` as session sid: the reply and whether
// it was granted (exit 0) or refused (exit 1).
func resvReserve(t *testing.T, h *H, sid string, args ...string) (wire.ReserveReply, bool) {
	t.Helper()
	r := h.Run(append([]string{"--json", "--session", sid, "reserve"}, args...)...)
	var res wire.ReserveReply
	if r.Code != 0 && r.Code != 1 || json.Unmarshal([]byte(r.Stdout), &res) != nil {
		t.Fatalf("reserve %v as %s: exit %d\nstdout: %s\nstderr: %s", args, sid, r.Code, r.Stdout, r.Stderr)
	}
	if (r.Code == 0) != (len(res.Granted) > 0 && len(res.Refused) == 0) {
		t.Fatalf("reserve %v as %s: exit %d does not match the reply %+v", args, sid, r.Code, res)
	}
	return res, r.Code == 0
}

// resvList is `reservations --json` (this project).
func resvList(t *testing.T, h *H, args ...string) wire.ReservationsReply {
	t.Helper()
	var res wire.ReservationsReply
	h.JSON(&res, append([]string{"reservations"}, args...)...)
	return res
}

// resvHistory is the timeline of path.
func resvHistory(t *testing.T, h *H, path string) []wire.ReservationEvent {
	return resvList(t, h, "--history", path).History
}

// TestReservationsRaceOneHolderTokensIncrease: eight sessions race for one
// path, round after round, with the broker kill -9'd between rounds and
// while a lease is held: each round exactly one wins, every loser is
// refused naming the winner, and the winners' tokens strictly increase.
func TestReservationsRaceOneHolderTokensIncrease(t *testing.T) {
	t.Parallel()
	h := newH(t)
	const racers, rounds = 8, 6
	var ids []string
	for i := range racers {
		_, ev := h.Attach("--name", fmt.Sprintf("racer%d", i))
		ids = append(ids, ev["id"].(string))
	}
	var last uint64
	for round := range rounds {
		type outcome struct {
			sid     string
			granted bool
			res     wire.ReserveReply
			err     error
		}
		outs := make([]outcome, racers)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, sid := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				ctx, cancel := context.WithTimeout(context.Background(), msgWait)
				defer cancel()
				c := h.cmd(ctx, "intercom", "--json", "--session", sid, "reserve", "shared/parser.go", "--reason", "round "+fmt.Sprint(round))
				out, err := c.Output()
				var ee *exec.ExitError
				o := outcome{sid: sid, granted: err == nil}
				if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
					o.err = fmt.Errorf("%v: %s", err, out)
				} else if jerr := json.Unmarshal(out, &o.res); jerr != nil {
					o.err = fmt.Errorf("decode %q: %w", out, jerr)
				}
				outs[i] = o
			}()
		}
		close(start)
		AwaitGroup(t, &wg, 3*msgWait, "the racers of round %d", round)
		var winner *outcome
		for i := range outs {
			o := &outs[i]
			if o.err != nil {
				t.Fatalf("round %d, %s: %v", round, o.sid, o.err)
			}
			if o.granted {
				if winner != nil {
					t.Fatalf("round %d: both %s and %s were granted the path", round, winner.sid, o.sid)
				}
				winner = o
			}
		}
		if winner == nil {
			t.Fatalf("round %d: nobody was granted the free path: %+v", round, outs)
		}
		tok := winner.res.Granted[0].Token
		if tok <= last {
			t.Fatalf("round %d: token %d is not greater than the previous grant's %d", round, tok, last)
		}
		last = tok
		for _, o := range outs {
			if o.granted {
				continue
			}
			if len(o.res.Refused) != 1 || o.res.Refused[0].Held.SessionID != winner.sid || o.res.Refused[0].Held.Token != tok {
				t.Fatalf("round %d: %s refused with %+v, want the winner %s (token %d) named", round, o.sid, o.res.Refused, winner.sid, tok)
			}
		}
		if round%2 == 1 { // the lease is durable: kill -9 while held
			if _, err := faultKill(h); err != nil {
				t.Fatal(err)
			}
		}
		held := resvList(t, h).Reservations
		if len(held) != 1 || held[0].SessionID != winner.sid || held[0].Token != tok {
			t.Fatalf("round %d: reservations %+v, want only %s with token %d", round, held, winner.sid, tok)
		}
		h.OK("--session", winner.sid, "release", "shared/parser.go")
		if round%3 == 2 { // and the token high-water mark survives kill -9 with nothing held
			if _, err := faultKill(h); err != nil {
				t.Fatal(err)
			}
		}
	}
	grants := 0
	for _, ev := range resvHistory(t, h, "shared/parser.go") {
		if ev.Event == "grant" {
			grants++
		}
	}
	if grants != rounds {
		t.Fatalf("history holds %d grants, want %d", grants, rounds)
	}
}

// TestReservationsHolderKilledReleasedAfterGrace: a holder killed with
// SIGKILL keeps its lease until the grace period after its disconnect has
// passed, not before; then another session gets the path with a greater
// token, and the history says why the first lease ended.
func TestReservationsHolderKilledReleasedAfterGrace(t *testing.T) {
	t.Parallel()
	h := newH(t)
	const grace = 8 * time.Second // long enough for the refusal below on a loaded machine
	h.Env = append(h.Env, "INTERCOM_RESERVATION_GRACE="+grace.String())
	alice, ev := h.Attach("--name", "alice")
	aliceID := ev["id"].(string)
	_, ev = h.Attach("--name", "bob")
	bobID := ev["id"].(string)
	first, ok := resvReserve(t, h, aliceID, "notes.md", "--reason", "rewriting the notes")
	if !ok {
		t.Fatalf("alice refused a free path: %+v", first)
	}
	alice.Kill()
	killed := time.Now()
	res, ok := resvReserve(t, h, bobID, "notes.md")
	if ok || len(res.Refused) != 1 || res.Refused[0].Held.Name != "alice" {
		t.Fatalf("just after alice's kill bob got %+v (granted %v), want a refusal naming alice", res, ok)
	}
	var got wire.ReserveReply
	Eventually(t, 10*grace, func() bool {
		got, ok = resvReserve(t, h, bobID, "notes.md")
		return ok
	}, "bob to get notes.md once alice's grace period passed")
	if waited := time.Since(killed); waited < grace {
		t.Fatalf("alice's lease ended %s after her kill, before the %s grace period", waited, grace)
	}
	if got.Granted[0].Token <= first.Granted[0].Token {
		t.Fatalf("bob's token %d is not greater than alice's %d", got.Granted[0].Token, first.Granted[0].Token)
	}
	var events []string
	for _, ev := range resvHistory(t, h, "notes.md") {
		events = append(events, ev.Event+":"+ev.Name)
	}
	if want := "grant:alice gone:alice grant:bob"; strings.Join(events, " ") != want {
		t.Fatalf("history %q, want %q", events, want)
	}
}

// TestReservationsLiveHolderRenewedNeverStolen: a holder whose lease is
// much shorter than the test keeps it while it is active (its state
// reports renew it), whatever others try; once it goes quiet the lease
// expires and the next grant fences the old token out.
func TestReservationsLiveHolderRenewedNeverStolen(t *testing.T) {
	t.Parallel()
	h := newH(t)
	const ttl = 15 * time.Second // many commands fit in it, even on a loaded machine
	_, ev := h.Attach("--name", "alice")
	aliceID := ev["id"].(string)
	_, ev = h.Attach("--name", "bob")
	bobID := ev["id"].(string)
	first, ok := resvReserve(t, h, aliceID, "src/**", "--ttl", ttl.String(), "--reason", "moving files")
	if !ok {
		t.Fatalf("alice refused: %+v", first)
	}
	tok := first.Granted[0].Token
	for i := range 8 { // more than one and a half TTLs
		h.OK("--session", aliceID, "state", "tool:Edit")
		if res, ok := resvReserve(t, h, bobID, "src/main.go"); ok || res.Refused[0].Held.SessionID != aliceID {
			t.Fatalf("try %d: bob got %+v of alice's active lease", i, res)
		}
		time.Sleep(ttl / 5) // the pace of the holder's activity
	}
	h.OK("--session", aliceID, "reservations", "--check", "src/a.go", "--token", fmt.Sprint(tok))
	var got wire.ReserveReply
	Eventually(t, 20*ttl, func() bool {
		got, ok = resvReserve(t, h, bobID, "src/main.go")
		return ok
	}, "alice's quiet lease to expire")
	if r := h.Run("--session", aliceID, "reservations", "--check", "src/a.go", "--token", fmt.Sprint(tok)); r.Code != 1 {
		t.Fatalf("alice's lapsed token %d checked exit %d, want 1: %s%s", tok, r.Code, r.Stdout, r.Stderr)
	}
	if got.Granted[0].Token <= tok {
		t.Fatalf("bob's token %d not greater than alice's %d", got.Granted[0].Token, tok)
	}
	if evs := resvHistory(t, h, "src/**"); len(evs) != 2 || evs[1].Event != "expire" {
		t.Fatalf("history of src/** %+v, want grant then expire", evs)
	}
}

// resvGit runs git in dir with the test's intercom environment.
func resvGit(t *testing.T, h *H, dir string, env []string, args ...string) (string, int) {
	t.Helper()
	c := exec.Command("git", args...)
	c.Dir = dir
	c.Env = append(os.Environ(), "INTERCOM_HOME="+h.Home, "INTERCOM_SOCKET=", "PATH="+binDir+":"+os.Getenv("PATH"),
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid")
	c.Env = append(c.Env, env...)
	out, err := c.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("git %v: %v", args, err)
	}
	return string(out), c.ProcessState.ExitCode()
}

// TestReservationsGitHookRefusesAndOverridePasses: the pre-commit hook
// refuses another session's commit of a reserved path, naming the holder;
// INTERCOM_RESERVATIONS_OVERRIDE=1 passes and is logged; the holder's own
// commit passes; uninstall removes the hook.
func TestReservationsGitHookRefusesAndOverridePasses(t *testing.T) {
	t.Parallel()
	h := newH(t)
	repo := filepath.Join(h.Cwd, "repo")
	if err := os.MkdirAll(repo, 0o700); err != nil {
		t.Fatal(err)
	}
	resvGit(t, h, repo, nil, "init", "-q")
	h.RunIn(repo, "", "install", "git-hook")
	hook := filepath.Join(repo, ".git", "hooks", "pre-commit")
	if fi, err := os.Stat(hook); err != nil || fi.Mode()&0o100 == 0 {
		t.Fatalf("pre-commit hook not installed executable: %v", err)
	}
	_, ev := h.Attach("--name", "alice")
	aliceID := ev["id"].(string)
	h.Attach("--name", "bob")
	if r := h.RunIn(repo, "", "--session", "alice", "reserve", "api.go", "--reason", "new endpoint"); r.Code != 0 {
		t.Fatalf("reserve: %d %s", r.Code, r.Stderr)
	}
	if err := os.WriteFile(filepath.Join(repo, "api.go"), []byte("package api\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	resvGit(t, h, repo, nil, "add", "api.go")
	out, code := resvGit(t, h, repo, []string{"INTERCOM_SESSION=bob"}, "commit", "-qm", "bob's change")
	if code == 0 || !strings.Contains(out, "api.go is reserved by alice") || !strings.Contains(out, "new endpoint") {
		t.Fatalf("bob's commit of a reserved path: exit %d\n%s", code, out)
	}
	out, code = resvGit(t, h, repo, []string{"INTERCOM_SESSION=bob", "INTERCOM_RESERVATIONS_OVERRIDE=1"}, "commit", "-qm", "bob's override")
	if code != 0 {
		t.Fatalf("override refused: exit %d\n%s", code, out)
	}
	logged, err := os.ReadFile(filepath.Join(h.Home, "reservation-overrides.log"))
	if err != nil || !strings.Contains(string(logged), "api.go held by alice") {
		t.Fatalf("override not logged: %v %q", err, logged)
	}
	if err := os.WriteFile(filepath.Join(repo, "api.go"), []byte("package api // v2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	resvGit(t, h, repo, nil, "add", "api.go")
	if out, code := resvGit(t, h, repo, []string{"INTERCOM_SESSION=" + aliceID}, "commit", "-qm", "alice's own"); code != 0 {
		t.Fatalf("the holder's own commit refused: exit %d\n%s", code, out)
	}
	h.RunIn(repo, "", "uninstall", "git-hook")
	if _, err := os.Stat(hook); !os.IsNotExist(err) {
		t.Fatalf("pre-commit hook still there after uninstall: %v", err)
	}
}

// resvHook runs `intercom hook HARNESS PreToolUse` on input.
func resvHook(t *testing.T, h *H, harness string, input map[string]any) Result {
	t.Helper()
	return h.RunIn(h.Cwd, string(mustJSON(t, input)), "hook", harness, "PreToolUse")
}

// TestReservationsPreToolHooksBlockOthersNotTheHolder: the Claude Code and
// Codex PreToolUse hooks deny another session's Write, Edit, apply_patch
// and shell redirect into a reserved file, naming holder, reason and how
// to ask; the holder's own edits pass; Pi's check answers the same; a
// hook that cannot reach the broker lets the call run and says so.
func TestReservationsPreToolHooksBlockOthersNotTheHolder(t *testing.T) {
	t.Parallel()
	h := newH(t)
	h.Attach("--name", "holder", "--id", "cc-holder-1")
	h.Attach("--name", "other", "--id", "cx-other-1")
	h.OK("--session", "holder", "reserve", "lib/core.go", "--reason", "refactoring core")
	file := filepath.Join(h.Cwd, "lib", "core.go")
	denied := func(r Result) string {
		t.Helper()
		var out struct {
			HookSpecificOutput struct {
				HookEventName, PermissionDecision, PermissionDecisionReason string
			}
		}
		if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &out) != nil || out.HookSpecificOutput.PermissionDecision != "deny" {
			t.Fatalf("want a deny, got exit %d stdout %q stderr %q", r.Code, r.Stdout, r.Stderr)
		}
		return out.HookSpecificOutput.PermissionDecisionReason
	}
	for _, c := range []struct {
		harness, tool string
		input         any
	}{
		{"claude", "Write", map[string]any{"file_path": file, "content": "x"}},
		{"claude", "Bash", map[string]any{"command": "echo x > lib/core.go"}},
		{"codex", "apply_patch", map[string]any{"command": "*** Begin Patch\n*** Update File: lib/core.go\n@@\n-a\n+b\n*** End Patch\n"}},
	} {
		sess := map[string]string{"claude": "other-claude", "codex": "other-1"}[c.harness]
		why := denied(resvHook(t, h, c.harness, map[string]any{"session_id": sess, "cwd": h.Cwd, "hook_event_name": "PreToolUse", "tool_name": c.tool, "tool_input": c.input}))
		for _, want := range []string{"lib/core.go", "holder", "refactoring core", "intercom ask holder"} {
			if !strings.Contains(why, want) {
				t.Fatalf("%s %s: reason %q lacks %q", c.harness, c.tool, why, want)
			}
		}
	}
	own := resvHook(t, h, "claude", map[string]any{"session_id": "holder-1", "cwd": h.Cwd, "tool_name": "Edit",
		"tool_input": map[string]any{"file_path": file, "old_string": "a", "new_string": "b"}})
	if own.Code != 0 || strings.TrimSpace(own.Stdout) != "" {
		t.Fatalf("the holder's own edit: exit %d stdout %q stderr %q, want it let through silently", own.Code, own.Stdout, own.Stderr)
	}
	free := resvHook(t, h, "codex", map[string]any{"session_id": "other-1", "cwd": h.Cwd, "tool_name": "apply_patch",
		"tool_input": map[string]any{"command": "*** Begin Patch\n*** Add File: lib/other.go\n+x\n*** End Patch\n"}})
	if free.Code != 0 || strings.TrimSpace(free.Stdout) != "" {
		t.Fatalf("an edit of a free path: exit %d stdout %q", free.Code, free.Stdout)
	}
	var v struct {
		Block  bool
		Reason string
	}
	h.JSON(&v, "--session", "other", "reservations", "--check-tool", "edit")
	if v.Block {
		t.Fatalf("--check-tool with no input blocked: %+v", v)
	}
	r := h.RunIn(h.Cwd, `{"path":"lib/core.go","oldText":"a","newText":"b"}`, "--json", "--session", "other", "reservations", "--check-tool", "edit")
	if json.Unmarshal([]byte(r.Stdout), &v) != nil || !v.Block || !strings.Contains(v.Reason, "holder") {
		t.Fatalf("Pi's check of another session's edit: exit %d %q", r.Code, r.Stdout)
	}
	broken := h.RunIn(h.Cwd, string(mustJSON(t, map[string]any{"session_id": "other-1", "cwd": h.Cwd, "tool_name": "Write",
		"tool_input": map[string]any{"file_path": file}})), "--socket", filepath.Join(h.Cwd, "no-such.sock"), "hook", "claude", "PreToolUse")
	if broken.Code != 0 || strings.TrimSpace(broken.Stdout) != "" || !strings.Contains(broken.Stderr, "intercom hook claude PreToolUse") {
		t.Fatalf("a hook failing internally: exit %d stdout %q stderr %q, want exit 0, no answer, one stderr line", broken.Code, broken.Stdout, broken.Stderr)
	}
}

// TestReservationsGeminiBeforeToolAnswersJSON: Gemini CLI's BeforeTool
// hook denies another session's write_file, replace and shell redirect
// into a reserved file ({"decision":"deny"} naming holder, reason and how
// to ask), and answers {} for a free path and when it fails internally
// (Gemini CLI always reads JSON), with one stderr line for the failure.
func TestReservationsGeminiBeforeToolAnswersJSON(t *testing.T) {
	t.Parallel()
	h := newH(t)
	h.Attach("--name", "holder", "--id", "cc-holder-1")
	h.OK("--session", "holder", "reserve", "lib/core.go", "--reason", "refactoring core")
	file := filepath.Join(h.Cwd, "lib", "core.go")
	beforeTool := func(tool string, input any, flags ...string) Result {
		t.Helper()
		in := mustJSON(t, map[string]any{"session_id": "g-other", "cwd": h.Cwd, "hook_event_name": "BeforeTool", "tool_name": tool, "tool_input": input})
		return h.RunIn(h.Cwd, string(in), append(flags, "hook", "gemini", "BeforeTool")...)
	}
	for _, c := range []struct {
		tool  string
		input any
	}{
		{"write_file", map[string]any{"file_path": file, "content": "x"}},
		{"replace", map[string]any{"file_path": "lib/core.go", "old_string": "a", "new_string": "b"}},
		{"run_shell_command", map[string]any{"command": "echo x >> lib/core.go"}},
	} {
		r := beforeTool(c.tool, c.input)
		var out struct{ Decision, Reason string }
		if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &out) != nil || out.Decision != "deny" {
			t.Fatalf("%s: want a deny, got exit %d stdout %q stderr %q", c.tool, r.Code, r.Stdout, r.Stderr)
		}
		for _, want := range []string{"lib/core.go", "holder", "refactoring core", "intercom ask holder"} {
			if !strings.Contains(out.Reason, want) {
				t.Fatalf("%s: reason %q lacks %q", c.tool, out.Reason, want)
			}
		}
	}
	if free := beforeTool("write_file", map[string]any{"file_path": "lib/other.go", "content": "x"}); free.Code != 0 || free.Stdout != "{}\n" {
		t.Fatalf("a write of a free path: exit %d stdout %q, want {}", free.Code, free.Stdout)
	}
	if read := beforeTool("read_file", map[string]any{"file_path": file}); read.Code != 0 || read.Stdout != "{}\n" {
		t.Fatalf("a read of the reserved path: exit %d stdout %q, want {}", read.Code, read.Stdout)
	}
	broken := beforeTool("write_file", map[string]any{"file_path": file}, "--socket", filepath.Join(h.Cwd, "no-such.sock"))
	if broken.Code != 0 || broken.Stdout != "{}\n" || !strings.Contains(broken.Stderr, "intercom hook gemini BeforeTool") {
		t.Fatalf("a hook failing internally: exit %d stdout %q stderr %q, want exit 0, {}, one stderr line", broken.Code, broken.Stdout, broken.Stderr)
	}
}
