package e2e

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Hook storms (docs/reliability.md): every tool call of every agent runs a
// hook process (intercom-hook, as install writes it). stormAgents agents,
// each a harness (fakeharness) running PostToolUse hooks one after
// another, at most one per stormEvery, for stormFor, while each agent's
// shell sends messages to the next agent as that agent's session. Every
// accepted message comes out of exactly one hook answer of its target;
// every hook exits 0 and says nothing on stderr; the broker's CPU per hook
// and its RSS stay under generous bounds.
// FAULT_LONG=1 (make test-fault) storms for a minute.

const (
	stormAgents = 30
	stormEvery  = 250 * time.Millisecond
)

func stormFor() time.Duration {
	if os.Getenv("FAULT_LONG") != "" && os.Getenv("FAULT_SHORT") == "" {
		return time.Minute
	}
	return 5 * time.Second
}

var stormRE = regexp.MustCompile(`<storm from \d+ #\d+>`)

// stormText is the k-th message agent from sends to its next agent.
func stormText(from, k int) string { return fmt.Sprintf("<storm from %d #%d>", from, k) }

func TestHookStorm(t *testing.T) {
	t.Parallel()
	h := newH(t)
	fndNoIdleExit(h)
	agents := make([]*Agent, stormAgents)
	sids := make([]string, stormAgents)
	for i := range agents {
		agents[i] = newAgent(t, h)
		hsid := fmt.Sprintf("5707a9e0-0000-4000-8000-%012d", i)
		out, _ := agents[i].HookExe("claude", "SessionStart", claudeInput("SessionStart", map[string]any{"session_id": hsid, "source": "startup"}))
		if out.HookSpecificOutput == nil {
			t.Fatalf("agent %d: SessionStart said nothing", i)
		}
		sids[i] = "cc-" + hsid
	}
	t.Cleanup(func() { // all at once: each agent's own cleanup waits for every holder of h
		for _, a := range agents {
			a.Close()
		}
	})
	broker := h.BrokerPid()
	cpu0 := procTicks(t, broker)

	var mu sync.Mutex
	got := make([]map[string]int, stormAgents) // per target: text → times delivered
	accepted := map[string]int{}               // text → target
	hooks := 0
	for i := range got {
		got[i] = map[string]int{}
	}
	post := func(i int) string {
		in := claudeInput("PostToolUse", map[string]any{"session_id": strings.TrimPrefix(sids[i], "cc-"), "tool_name": "Bash", "tool_input": map[string]any{"command": "true"}})
		out, ans := agents[i].HookExe("claude", "PostToolUse", in)
		if ans.Stderr != "" {
			t.Errorf("agent %d: hook stderr %q", i, ans.Stderr)
		}
		ctx := ""
		if out.HookSpecificOutput != nil {
			ctx = out.HookSpecificOutput.AdditionalContext
		}
		return ctx
	}
	record := func(i int, ctx string) {
		mu.Lock()
		defer mu.Unlock()
		hooks++
		for _, text := range stormRE.FindAllString(ctx, -1) {
			got[i][text]++
		}
	}

	end := time.Now().Add(stormFor())
	var wg sync.WaitGroup
	for i := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			next, k := time.Now(), 0
			for n := 0; time.Now().Before(end); n++ {
				time.Sleep(time.Until(next))
				next = next.Add(stormEvery)
				record(i, post(i))
				if n%3 == 1 { // a tool call that messages the next agent
					to := (i + 1) % stormAgents
					if r := agents[i].Bash(fmt.Sprintf("intercom send %s %q", sids[to], stormText(i, k))); r.Code == 0 {
						mu.Lock()
						accepted[stormText(i, k)] = to
						mu.Unlock()
					} else {
						t.Errorf("agent %d: send exit %d: %s", i, r.Code, r.Stderr)
					}
					k++
				}
			}
		}()
	}
	AwaitGroup(t, &wg, stormFor()+5*time.Minute, "the storm to end")
	cpu := float64(procTicks(t, broker)-cpu0) * 10 // ms
	rss := procRSS(t, broker)

	// What is still queued comes out of the next hooks.
	for i := range agents {
		for try := 0; try < 20; try++ {
			mu.Lock()
			want := 0
			for _, to := range accepted {
				if to == i {
					want++
				}
			}
			have := len(got[i])
			mu.Unlock()
			if have >= want {
				break
			}
			record(i, post(i))
		}
	}
	lost, dup := 0, 0
	for text, to := range accepted {
		switch n := got[to][text]; {
		case n == 0:
			lost++
			t.Errorf("%s to agent %d never delivered", text, to)
		case n > 1:
			dup++
			t.Errorf("%s delivered %d times to agent %d", text, n, to)
		}
	}
	for i := range got {
		for text := range got[i] {
			if _, ok := accepted[text]; !ok {
				t.Errorf("agent %d got %s, which no send accepted", i, text)
			}
		}
	}
	perHook := cpu / float64(max(1, hooks))
	t.Logf("storm: %d agents, %d hooks in %s, %d messages (lost %d, duplicated %d); broker CPU %.0f ms (%.2f ms per hook), RSS %d MiB",
		stormAgents, hooks, stormFor(), len(accepted), lost, dup, cpu, perHook, rss>>20)
	if len(accepted) < stormAgents {
		t.Fatalf("only %d messages accepted: the storm did not run", len(accepted))
	}
	// Generous bounds (the race detector multiplies both): a leak or a cost
	// growing with the storm crosses them, ordinary noise does not.
	maxPerHook, maxRSS := 10.0, int64(256<<20)
	if os.Getenv("E2E_NORACE") == "" {
		maxPerHook, maxRSS = 60, 1<<30
	}
	if perHook > maxPerHook {
		t.Errorf("broker CPU %.2f ms per hook, bound %.0f ms", perHook, maxPerHook)
	}
	if rss > maxRSS {
		t.Errorf("broker RSS %d MiB, bound %d MiB", rss>>20, maxRSS>>20)
	}
}
