package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// hostileCase is one generated command line and what must come of it.
type hostileCase struct {
	bin   string
	args  []string
	stdin string // a path, or "" for an empty stdin
	env   []string
	code  int    // the exit status it must have
	why   string // what is hostile about it
}

// hostileGen draws hostile inputs: control characters, huge and odd
// sizes, odd durations, broken JSON, unknown targets, bad enum values.
type hostileGen struct {
	r                    *rand.Rand
	dir, sparse, endless string
}

func (g *hostileGen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

// text is random printable text with spaces and unicode.
func (g *hostileGen) text(n int) string {
	alphabet := []rune("abcdefghijklmnopqrstuvwxyz ABC0123456789äöü計画→🙂.,:;!?'\"$`\\{}[]")
	var b strings.Builder
	for range n {
		b.WriteRune(alphabet[g.r.IntN(len(alphabet))])
	}
	return b.String()
}

// control is text holding at least one control character other than tab,
// LF and CR (argv cannot hold NUL).
func (g *hostileGen) control() string {
	c := []string{"\x01", "\x07", "\x08", "\x1b[31m", "\x1b]0;title\x07", "\x7f", "\x0b", "\x0c", "\x1f"}
	t := g.text(g.r.IntN(40))
	i := g.r.IntN(len(t) + 1)
	return t[:i] + g.pick(c...) + t[i:]
}

// duration is a duration no flag accepts (0 is added for the flags that
// refuse it).
func (g *hostileGen) duration(withZero bool) string {
	if withZero && g.r.IntN(8) == 0 {
		return "0"
	}
	return g.pick("-1s", "-0.5ms", "1000h", "169h", "5", "abc", "1e9h", "9223372036854775807ns", "1ns", "999us", "", " ", "1h-1m", "∞", "10d")
}

// unknown is a target no session has: control characters, unicode,
// spaces or a huge string, never starting with '-'.
func (g *hostileGen) unknown() string {
	switch g.r.IntN(4) {
	case 0:
		return "z" + g.control()
	case 1:
		return "z" + strings.Repeat("x", 1000+g.r.IntN(100000))
	case 2:
		return "zz " + g.text(1+g.r.IntN(30))
	}
	return "zz" + strconv.FormatUint(g.r.Uint64(), 16)
}

// brokenJSON is an interview document damaged at random.
func (g *hostileGen) brokenJSON() string {
	valid := `{"title":"t","questions":[{"id":"a","type":"single","question":"Which?","options":["x","y"]}]}`
	switch g.r.IntN(5) {
	case 0:
		return valid[:g.r.IntN(len(valid)-1)]
	case 1:
		return strings.Replace(valid, `"single"`, `"`+g.text(6)+`"`, 1)
	case 2:
		return `{"questions":[]}`
	case 3:
		return strings.Repeat("[", 10000+g.r.IntN(100000))
	}
	return g.control()
}

func (g *hostileGen) file() (string, string) {
	return g.pick("/dev/zero", g.sparse, g.endless, g.dir, filepath.Join(g.dir, "missing-"+g.text(5))), "file"
}

func (g *hostileGen) next() hostileCase {
	child := []string{"INTERCOM_SUPERVISOR=worker", "INTERCOM_RUN_ID=a1b2c3d4", "INTERCOM_CHILD_AGENT=w", "INTERCOM_CHILD_INDEX=0"}
	switch g.r.IntN(15) {
	case 0:
		d, d0 := g.duration(false), g.duration(true) // 0 means something for --wait, --grace, --idle-exit
		return g.pickCase(
			hostileCase{bin: "intercom", args: []string{"ask", "worker", "x", "--timeout=" + d0}, code: 2, why: "ask --timeout " + d0},
			hostileCase{bin: "intercom", args: []string{"--session", "worker", "inbox", "--wait=" + d}, code: 2, why: "inbox --wait " + d},
			hostileCase{bin: "intercom", args: []string{"--session", "worker", "wait", "--timeout=" + d0}, code: 2, why: "wait --timeout " + d0},
			hostileCase{bin: "agent-runs", args: []string{"stop", "a1b2c3d4", "--grace=" + d}, code: 2, why: "stop --grace " + d},
			hostileCase{bin: "intercom-broker", args: []string{"--idle-exit=" + d}, code: 2, why: "broker --idle-exit " + d},
		)
	case 1:
		return g.pickCase(
			hostileCase{bin: "intercom", args: []string{"send", "worker", g.control()}, code: 2, why: "send control characters"},
			hostileCase{bin: "intercom", args: []string{"ask", "worker", g.control()}, code: 2, why: "ask control characters"},
			hostileCase{bin: "intercom", args: []string{"--session", "worker", "reply", g.control()}, code: 2, why: "reply control characters"},
		)
	case 2:
		return hostileCase{bin: "intercom", args: []string{"send", "worker", "-"}, stdin: g.pick("/dev/zero", g.sparse, g.endless), code: 2, why: "endless or huge stdin"}
	case 3:
		f, _ := g.file()
		code := 2
		return g.pickCase(
			hostileCase{bin: "intercom", args: []string{"send", "worker", "--file", f, "x"}, code: code, why: "--file " + f},
			hostileCase{bin: "intercom", args: []string{"ask", "worker", "--snippet", "s:go=" + f, "x"}, code: code, why: "--snippet " + f},
		)
	case 4:
		return hostileCase{bin: "intercom", args: []string{"contact-supervisor", "--reason", "interview_request", "--interview", "-"},
			stdin: g.writeTemp(g.brokenJSON()), env: child, code: 2, why: "broken interview JSON"}
	case 5:
		t := g.unknown()
		return g.pickCase(
			hostileCase{bin: "intercom", args: []string{"send", t, "hello"}, code: 1, why: "send to an unknown target"},
			hostileCase{bin: "intercom", args: []string{"forget", t, "--yes"}, code: 1, why: "forget an unknown target"},
			hostileCase{bin: "intercom", args: []string{"--session", t, "pending"}, code: 1, why: "an unknown --session"},
			hostileCase{bin: "intercom", args: []string{"trace", "m" + g.text(8)}, code: 1, why: "trace an unknown id"},
			hostileCase{bin: "agent-runs", args: []string{"status", t}, code: 1, why: "status of an unknown run"},
			hostileCase{bin: "agent-runs", args: []string{"answer", "a1b2c3d4", "--question-id", "q" + g.text(4), "x"}, code: 1, why: "answer an unknown run"},
		)
	case 6:
		v := g.text(1 + g.r.IntN(12))
		return g.pickCase(
			hostileCase{bin: "intercom", args: []string{"send", "--delivery", "z" + v, "worker", "x"}, code: 2, why: "--delivery " + v},
			hostileCase{bin: "intercom", args: []string{"list", "--scope", "z" + v}, code: 2, why: "--scope " + v},
			hostileCase{bin: "intercom", args: []string{"contact-supervisor", "--reason", "z" + v}, env: child, code: 2, why: "--reason " + v},
			hostileCase{bin: "intercom", args: []string{"install", "z" + v, "--dry-run"}, code: 2, why: "install " + v},
			hostileCase{bin: "agent-runs", args: []string{"questions", "--limit", g.pick("0", "101", "-5", "1e9", "x", "99999999999999999999")}, code: 2, why: "questions --limit"},
		)
	case 7:
		return hostileCase{bin: "intercom", args: []string{"--session", "worker", "state", g.pick("bogus", "tool:", "tool:a b", "idle"+g.control(), g.control())}, code: 2, why: "state with a bad status"}
	case 8:
		topic := g.pick("a b", "x/*", "x/>", "", "/lead", "t//u", g.control(), strings.Repeat("t", 300))
		return g.pickCase(
			hostileCase{bin: "intercom", args: []string{"--session", "worker", "subscribe", topic}, code: 2, why: "subscribe " + topic},
			hostileCase{bin: "intercom", args: []string{"--session", "worker", "publish", topic, "x"}, code: 2, why: "publish " + topic},
			hostileCase{bin: "intercom", args: []string{"topics", "z" + topic + " *"}, code: 2, why: "topics z" + topic + " *"}, // "" means all topics
		)
	case 9:
		return hostileCase{bin: "intercom", args: []string{"attach", "--name=" + g.pick(" "+g.text(3), g.control(), "a@b", "-x", strings.Repeat("n", 65+g.r.IntN(1000)))}, code: 2, why: "attach with a bad name"}
	case 10:
		return hostileCase{bin: "intercom", args: []string{"send", "worker", "--queue-mode", "replace", "x"}, code: 2, why: "replace without a thread"}
	case 11:
		// Over 1 MiB in words of 64 KiB (one argv string is at most 128 KiB).
		words := []string{"send", "worker"}
		for range 17 {
			words = append(words, strings.Repeat("é", 32<<10))
		}
		return hostileCase{bin: "intercom", args: words, code: 2, why: "a message over 1 MiB"}
	case 12:
		return hostileCase{bin: "intercom", args: []string{g.pick("sned", "lsit", "--bogus-flag", "attach --resume")}, code: 2, why: "unknown command or flag"}
	case 13:
		v := g.text(1 + g.r.IntN(12))
		run := g.pick("deadbeef", "z"+g.control(), "zz "+v)
		return g.pickCase(
			hostileCase{bin: "intercom", args: []string{"status", "--scope", "z" + v}, code: 2, why: "status --scope " + v},
			hostileCase{bin: "intercom", args: []string{"--session", "worker", "unsubscribe", g.pick("a b", "x/*", "t//u", g.control())}, code: 2, why: "unsubscribe a bad topic"},
			hostileCase{bin: "intercom", args: []string{"ui", "--name=" + g.control()}, code: 2, why: "ui with a bad name"},
			hostileCase{bin: "intercom", args: []string{"uninstall", "z" + v}, code: 2, why: "uninstall " + v},
			hostileCase{bin: "agent-runs", args: []string{"nudge", run, "x"}, code: 1, why: "nudge an unknown run"},
			hostileCase{bin: "agent-runs", args: []string{"continue", run}, code: 1, why: "continue an unknown run"},
		)
	}
	return hostileCase{bin: "intercom", args: []string{"--home", filepath.Join(g.dir, "missing", g.text(4), "home"), "list"}, code: 2, why: "--home under a missing parent"}
}

func (g *hostileGen) pickCase(cs ...hostileCase) hostileCase { return cs[g.r.IntN(len(cs))] }

func (g *hostileGen) writeTemp(s string) string {
	f, err := os.CreateTemp(g.dir, "stdin-*")
	if err != nil {
		panic(err)
	}
	_, _ = f.WriteString(s)
	f.Close()
	return f.Name()
}

// storeState is what a user can observe of the store: sessions (id, name,
// connected, queued, pending asks), topics and the runs directory.
func storeState(t *testing.T, h *H) string {
	t.Helper()
	var l struct {
		Sessions []struct {
			ID          string `json:"id"`
			Name        string `json:"name"`
			Connected   bool   `json:"connected"`
			Queued      int    `json:"queued"`
			PendingAsks int    `json:"pending_asks"`
		} `json:"sessions"`
	}
	h.JSON(&l, "list", "--scope", "all", "--all")
	sort.Slice(l.Sessions, func(i, j int) bool { return l.Sessions[i].ID < l.Sessions[j].ID })
	sessions, _ := json.Marshal(l.Sessions)
	topics := h.OK("--json", "topics")
	entries, _ := os.ReadDir(h.Layout.RunsDir())
	var runs []string
	for _, e := range entries {
		runs = append(runs, e.Name())
	}
	return fmt.Sprintf("sessions %s\ntopics %s\nruns %v", sessions, strings.TrimSpace(topics), runs)
}

// TestHostileInputsProperty feeds random hostile inputs to every command
// (huge sizes, control characters, odd durations, broken JSON, unknown
// targets, bad enum values; half of them with --json) and checks each
// time: one clear line (or, with --json, the error envelope alone), the
// right exit status, bounded memory; and that the store is unchanged.
// INTERCOM_PROPERTY_SEED replays a run; INTERCOM_PROPERTY_CASES sets how
// many cases (default 80).
func TestHostileInputsProperty(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("INTERCOM_PROPERTY_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	n := 80
	if s := os.Getenv("INTERCOM_PROPERTY_CASES"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	t.Logf("seed %d (replay with INTERCOM_PROPERTY_SEED=%d)", seed, seed)
	h := newH(t)
	worker, _ := h.Attach("--name", "worker")
	h.OK("--session", "worker", "subscribe", "repo/api")
	h.OK("--session", "worker", "publish", "repo/api", "--resource", "db", "--ownership", "held", "mine")
	dir := t.TempDir()
	sparse := sparseFile(t, dir)
	g := &hostileGen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), dir: dir, sparse: sparse, endless: endlessFIFO(t, dir)}
	before := storeState(t, h)
	for i := range n {
		tc := g.next()
		jsonOut := g.r.IntN(2) == 0 && tc.bin != "intercom-broker"
		args := tc.args
		if jsonOut {
			args = append([]string{"--json"}, args...)
		}
		var in *os.File
		if tc.stdin != "" {
			f, err := os.Open(tc.stdin)
			if err != nil {
				t.Fatal(err)
			}
			in = f
		}
		res, rss := h.runMeasured(tc.bin, in, tc.env, args...)
		if in != nil {
			in.Close()
		}
		if tc.stdin == g.endless || strings.Contains(strings.Join(tc.args, " "), g.endless) {
			g.endless = endlessFIFO(t, dir) // its writer is gone with its reader
		}
		what := fmt.Sprintf("case %d (%s; seed %d): %s %s", i, tc.why, seed, tc.bin, short(fmt.Sprintf("%q", args)))
		if res.Code != tc.code {
			t.Errorf("%s: exit %d, want %d\nstdout %s\nstderr %s", what, res.Code, tc.code, short(res.Stdout), short(res.Stderr))
		}
		switch {
		case jsonOut:
			var env struct {
				Error struct{ Code, Message string }
			}
			if res.Stderr != "" || json.Unmarshal([]byte(res.Stdout), &env) != nil || env.Error.Code == "" || env.Error.Message == "" ||
				strings.Count(res.Stdout, "\n") != 1 {
				t.Errorf("%s: --json: stdout %s, stderr %s; want the error envelope alone", what, short(res.Stdout), short(res.Stderr))
			}
		case strings.Count(res.Stderr, "\n") != 1 || !strings.HasSuffix(res.Stderr, "\n") || len(res.Stderr) > 2000 && !strings.Contains(tc.why, "unknown"):
			t.Errorf("%s: stderr %s, want one clear line", what, short(res.Stderr))
		case res.Stdout != "":
			t.Errorf("%s: printed %s on stdout", what, short(res.Stdout))
		}
		if strings.Contains(res.Stderr, "panic") || strings.Contains(res.Stdout, "goroutine ") {
			t.Fatalf("%s: crashed: %s", what, short(res.Stderr))
		}
		if rss > maxInputRSS {
			t.Errorf("%s: peak RSS %d MiB, want at most %d MiB", what, rss>>20, maxInputRSS>>20)
		}
	}
	// Broken config.json: every command refuses it with one line, exit 2.
	for range 6 {
		body := g.pick(`{"askTimeoutMs": -1}`, `{"idleExitMs": "5s"}`, `{`, `[]`, `{"sendTimeoutMs": 1e300}`, g.control(), `{"brokerArgs": [1]}`, `{"listTimeoutMs": 0.5}`)
		h.WriteConfig(body)
		res := h.Run("list")
		if res.Code != 2 || strings.Count(res.Stderr, "\n") != 1 || !strings.Contains(res.Stderr, "invalid config") {
			t.Errorf("config %q: exit %d, stderr %q", body, res.Code, res.Stderr)
		}
	}
	_ = os.Remove(h.Layout.ConfigFile())
	if after := storeState(t, h); after != before {
		t.Errorf("store changed (seed %d):\nbefore %s\nafter  %s", seed, before, after)
	}
	select {
	case <-worker.Done():
		t.Errorf("the worker's holder died: %s", worker.Stderr())
	default:
	}
}

// short quotes s, cut to a readable length.
func short(s string) string {
	if len(s) > 400 {
		return fmt.Sprintf("%q… (%d bytes)", s[:400], len(s))
	}
	return fmt.Sprintf("%q", s)
}
