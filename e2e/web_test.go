package e2e

// intercom web in a real browser (issue 34): headless Chromium (the Debian
// package; .ci/run installs it) driven through chromedp against the real
// binaries. The page shows a session that attaches, a message sent from the
// CLI appears on the timeline live and opens with its trace, search finds
// it, a message typed in the page reaches an attached session, and an
// answer typed in the page reaches a supervised child waiting in
// contact-supervisor. The guard refuses requests without the token, with a
// wrong one, with a foreign Host and cross-origin POSTs.
//
// With INTERCOM_WEB_SCREENSHOTS=DIR the browser test saves PNGs of the main
// views there (make web-screenshots writes docs/web/).

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/intercom-dev/intercom/internal/testenv"
)

const webWait = 30 * time.Second

// chromiumPath finds the browser, or skips the test saying how to get it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testenv.Need(t, false, "needs chromium on PATH (apt-get install -y chromium; .ci/run installs it) for the browser tests")
	return ""
}

// startWeb runs `intercom web` for h and returns its URL (with the token).
func startWeb(t *testing.T, h *H, name string) (*Proc, *url.URL) {
	t.Helper()
	p := h.Start("--json", "web", "--name", name)
	line, ok := p.Line(webWait)
	if !ok {
		t.Fatalf("intercom web printed nothing; stderr: %s", p.Stderr())
	}
	checkJSON(t, "intercom-web", line)
	var started struct {
		URL     string `json:"url"`
		Session string `json:"session"`
	}
	if err := json.Unmarshal([]byte(line), &started); err != nil {
		t.Fatalf("intercom web printed %q: %v", line, err)
	}
	u, err := url.Parse(started.URL)
	if err != nil || u.Hostname() != "127.0.0.1" || len(u.Query().Get("token")) < 32 {
		t.Fatalf("intercom web URL %q: want 127.0.0.1 with a long token (%v)", started.URL, err)
	}
	return p, u
}

// browser opens a headless Chromium tab at a laptop's window size.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)), chromedp.NoSandbox, chromedp.WindowSize(1366, 820),
		chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// run runs browser actions, failing the test after webWait.
func run(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	get(t, ctx, what, chromedp.Steps(actions...))
}

// get runs one browser action and returns its value, failing the test
// after webWait.
func get[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, webWait)
	defer cancel()
	v, err := chromedp.Run(tctx, a)
	if err != nil {
		body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
		t.Fatalf("%s: %v\npage: %s", what, err, tail(body, 30))
	}
	return v
}

// text is the text of the first element sel matches.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return get(t, ctx, "text of "+sel, chromedp.Text(chromedp.CSS(sel)))
}

// screenshot saves the page as DIR/name.png when INTERCOM_WEB_SCREENSHOTS
// is set.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("INTERCOM_WEB_SCREENSHOTS")
	if dir == "" {
		return
	}
	run(t, ctx, "settle", chromedp.Sleep(300*time.Millisecond)) // the last render, not a condition: a picture only
	png := get(t, ctx, "screenshot "+name, chromedp.CaptureScreenshot())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestWebInBrowser(t *testing.T) {
	chromiumPath(t)
	h := rsH(t)
	h.WriteConfig(`{"idleExitMs": 0}`)
	_, u := startWeb(t, h, "person")
	ctx := browser(t)

	run(t, ctx, "open the page", chromedp.Navigate(u.String()), chromedp.WaitVisible(chromedp.CSS("#live.on")))
	address := get(t, ctx, "location", chromedp.Location())
	if strings.Contains(address, "token") {
		t.Fatalf("address after opening: %s", address)
	}

	// A session that attaches appears.
	worker, _ := h.Attach("--name", "worker", "--model", "test-model-1")
	run(t, ctx, "worker listed", chromedp.WaitVisible(chromedp.CSS(`#sessions li[data-session="worker"] .dot.on`)))
	meta := text(t, ctx, `#sessions li[data-session="worker"] .meta`)
	if !strings.Contains(meta, "test-model-1") {
		t.Fatalf("worker row meta %q lacks its model", meta)
	}

	// A message from the CLI appears on the timeline, opens with its trace.
	var sent struct{ ID string }
	h.JSON(&sent, "--session", "worker", "send", "person", "the frobnicator build is green")
	msg := fmt.Sprintf(`#timeline .msg[data-id=%q]`, sent.ID)
	run(t, ctx, "message on the timeline", chromedp.WaitVisible(chromedp.CSS(msg)))
	var back struct{ ID string }
	h.JSON(&back, "--session", "person", "send", "worker", "thanks, ship it")
	run(t, ctx, "the answer on the timeline", chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#timeline .msg[data-id=%q]`, back.ID))))
	ev := rsNextMessage(t, worker)
	if ev["text"] != "thanks, ship it" {
		t.Fatalf("worker got %v", ev)
	}
	screenshot(t, ctx, "timeline")
	run(t, ctx, "open the message", chromedp.Click(chromedp.CSS(msg+" line")), chromedp.WaitVisible(chromedp.CSS("#trace table")))
	detail, trace := text(t, ctx, "#detail-text"), text(t, ctx, "#trace")
	if detail != "the frobnicator build is green" || !strings.Contains(trace, "stored") || !strings.Contains(trace, "delivered") {
		t.Fatalf("detail %q, trace %q", detail, trace)
	}

	// Search finds it, the match marked.
	run(t, ctx, "search", chromedp.SendKeys(chromedp.CSS("#search-input"), "frobnicator\n"),
		chromedp.WaitVisible(chromedp.CSS("#search-results li mark")))
	hit := text(t, ctx, "#search-results li mark")
	if hit != "frobnicator" {
		t.Fatalf("marked %q", hit)
	}
	screenshot(t, ctx, "search")

	// Sent from the page, as the person.
	run(t, ctx, "send from the page",
		chromedp.SetValue(chromedp.CSS("#send-to"), workerID(t, h)),
		chromedp.SendKeys(chromedp.CSS("#send-text"), "typed in the browser"),
		chromedp.Click(chromedp.CSS(`#send-form button[type=submit]`)))
	if ev := rsNextMessage(t, worker); ev["text"] != "typed in the browser" || rsSub(ev, "from")["name"] != "person" {
		t.Fatalf("worker got %v", ev)
	}

	// A supervised child's question, answered in the page.
	script := rsScript(t, h.Cwd, "child.sh", `
r=$(intercom contact-supervisor --reason need_decision -m "Which region should I deploy to?"); rc=$?
echo "answer: $r (exit $rc)"
`)
	id := rsStart(t, h, h.Cwd, "person", "--agent", "deployer", "--", "/bin/sh", script)
	q := rsAwaitQuestion(t, h, id)
	area := fmt.Sprintf(`[data-run=%q] [data-question=%q] .answer-text`, id, q.ID)
	run(t, ctx, "question shown", chromedp.Click(chromedp.CSS(`.tabs button[data-tab="runs"]`)), chromedp.WaitVisible(chromedp.CSS(area)))
	screenshot(t, ctx, "runs")
	run(t, ctx, "answer in the page", chromedp.SendKeys(chromedp.CSS(area), "eu-west-1"),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`[data-run=%q] [data-question=%q] button`, id, q.ID))))
	rsAwaitOutput(t, h, id, "answer: Reply from supervisor: eu-west-1 (exit 0)", rsWait)

	// Topics and the resources sessions hold.
	h.OK("--session", "worker", "publish", "deploy", "--resource", "prod-db", "--ownership", "held", "Migrating prod-db; do not deploy.")
	run(t, ctx, "resource held", chromedp.WaitVisible(chromedp.CSS(`#sessions li[data-session="worker"] .chip.held`)),
		chromedp.Click(chromedp.CSS(`.tabs button[data-tab="topics"]`)), chromedp.WaitVisible(chromedp.CSS(`#topics [data-topic="deploy"]`)))
	screenshot(t, ctx, "topics")
	run(t, ctx, "conversation", chromedp.Click(chromedp.CSS(`#sessions li[data-session="worker"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#conversation li[data-id]`)))
	screenshot(t, ctx, "conversations")
}

// workerID is the id of the session named worker.
func workerID(t *testing.T, h *H) string {
	t.Helper()
	id := rsStr(Row(h.Sessions("--scope", "all"), "worker")["id"])
	if id == "" {
		t.Fatal("no session worker")
	}
	return id
}

func TestWebRefusesWithoutTokenForeignHostOrOrigin(t *testing.T) {
	h := newH(t)
	h.WriteConfig(`{"idleExitMs": 0}`)
	_, u := startWeb(t, h, "person")
	h.Attach("--name", "worker")
	token := u.Query().Get("token")
	base := "http://" + u.Host
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, path string, hdr map[string]string, body string) int {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range hdr {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	send := `{"to":"worker","text":"x"}`
	jsonTok := map[string]string{"Content-Type": "application/json", "X-Intercom-Token": token}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range jsonTok {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	cases := []struct {
		what         string
		method, path string
		hdr          map[string]string
		body         string
		want         int
	}{
		{"the page with its token", "GET", "/?token=" + token, nil, "", http.StatusSeeOther},
		{"state with the token", "GET", "/api/state", map[string]string{"X-Intercom-Token": token}, "", http.StatusOK},
		{"a same-origin POST", "POST", "/api/send", with(map[string]string{"Origin": base}), send, http.StatusOK},
		{"no token", "GET", "/api/state", nil, "", http.StatusForbidden},
		{"the page without a token", "GET", "/", nil, "", http.StatusForbidden},
		{"a wrong token", "GET", "/?token=" + strings.Repeat("0", len(token)), nil, "", http.StatusForbidden},
		{"a wrong token header", "GET", "/api/state", map[string]string{"X-Intercom-Token": "nope"}, "", http.StatusForbidden},
		{"a foreign Host (DNS rebinding)", "GET", "/api/state", map[string]string{"X-Intercom-Token": token, "Host": "attacker.example:" + u.Port()}, "", http.StatusForbidden},
		{"a cross-origin POST", "POST", "/api/send", with(map[string]string{"Origin": "http://attacker.example"}), send, http.StatusForbidden},
		{"a POST with the cookie only", "POST", "/api/send", map[string]string{"Content-Type": "application/json", "Cookie": "intercom_web=" + token}, send, http.StatusForbidden},
	}
	for _, c := range cases {
		if got := do(c.method, c.path, c.hdr, c.body); got != c.want {
			t.Errorf("%s: status %d, want %d", c.what, got, c.want)
		}
	}
	// The one answer that is served carries a strict policy.
	req, _ := http.NewRequest("GET", base+"/api/state", nil)
	req.Header.Set("X-Intercom-Token", token)
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "unsafe") {
		t.Fatalf("Content-Security-Policy %q", csp)
	}
}
