package e2e

// Hostile peers (issue 21): an attacker holding one linked host's valid
// certificate speaks raw NATS (the hostilepeer program) to the other side:
// to a serving bridge as its "beta", and as a malicious hub that a victim's
// bridge joins. Each attempt must be refused or capped, and the victim
// healthy afterwards (memory, CPU, store size within the bounds stated
// below). Absence is proven with markers sent by a legitimate host after
// the attempt, over the same ordered path.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// Bounds the victim must stay within after the attacks (race-built
// binaries: several times the memory of a normal build).
const (
	hostileBrokerRSS = 600 << 20 // broker resident memory
	hostileBridgeRSS = 600 << 20 // bridge resident memory
	hostileStoreSize = 96 << 20  // the store on disk, with the test's quotas below (8 MiB of messages, 1 MiB of records)
	hostileIdleCPU   = 0.30      // share of one core used by the broker at rest afterwards
)

// hostileQuotas are the victim's quotas in these tests: small, so that
// reaching them is quick.
var hostileQuotas = []string{"--max-inbox-bytes", "4MiB", "--max-inbox-messages", "200", "--max-topic-bytes", "1MiB",
	"--max-topic-records", "50", "--max-subscriptions", "20", "--max-presence-rows", "300", "--max-msgs-per-sec", "20"}

var (
	hostileOnce sync.Once
	hostileErr  error
)

// hostilePath builds the hostilepeer program once, beside the binaries.
func hostilePath(t *testing.T) string {
	t.Helper()
	hostileOnce.Do(func() {
		args := []string{"build", "-o", filepath.Join(binDir, "hostilepeer"), "./hostilepeer"}
		if os.Getenv("E2E_NORACE") == "" {
			args = []string{"build", "-race", "-o", filepath.Join(binDir, "hostilepeer"), "./hostilepeer"}
		}
		out, err := exec.Command("go", args...).CombinedOutput()
		if err != nil {
			hostileErr = fmt.Errorf("build hostilepeer: %v\n%s", err, out)
		}
	})
	if hostileErr != nil {
		t.Fatal(hostileErr)
	}
	return filepath.Join(binDir, "hostilepeer")
}

// hostile is a running hostilepeer.
type hostile struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
	errb  *syncBuf
}

func startHostile(t *testing.T, args ...string) *hostile {
	t.Helper()
	c := exec.Command(hostilePath(t), args...)
	c.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	in, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	hp := &hostile{t: t, cmd: c, in: in, lines: make(chan string, 64), errb: &syncBuf{b: &bytes.Buffer{}}}
	c.Stderr = hp.errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			hp.lines <- sc.Text()
		}
		close(hp.lines)
	}()
	t.Cleanup(func() {
		_ = c.Process.Kill()
		_ = c.Wait()
	})
	return hp
}

func (hp *hostile) stderr() string {
	hp.errb.mu.Lock()
	defer hp.errb.mu.Unlock()
	return hp.errb.b.String()
}

func (hp *hostile) next(wait time.Duration) map[string]any {
	hp.t.Helper()
	select {
	case l, ok := <-hp.lines:
		if !ok {
			hp.t.Fatalf("hostilepeer exited; stderr: %s", hp.stderr())
		}
		var out map[string]any
		if err := json.Unmarshal([]byte(l), &out); err != nil {
			hp.t.Fatalf("hostilepeer said %q", l)
		}
		return out
	case <-time.After(wait):
		hp.t.Fatalf("hostilepeer: no answer within %s; stderr: %s", wait, hp.stderr())
	}
	return nil
}

// do runs one command and returns its answer.
func (hp *hostile) do(c map[string]any) map[string]any {
	hp.t.Helper()
	data, _ := json.Marshal(c)
	if _, err := hp.in.Write(append(data, '\n')); err != nil {
		hp.t.Fatalf("hostilepeer: %v; stderr: %s", err, hp.stderr())
	}
	return hp.next(3 * time.Minute)
}

// mustRefuse runs c and fails unless the answer says refused.
func (hp *hostile) mustRefuse(what string, c map[string]any) {
	hp.t.Helper()
	if out := hp.do(c); out["refused"] != true {
		hp.t.Errorf("%s: not refused: %v", what, out)
	}
}

// replyCode is the error code of a request's reply ("" for a result).
func replyCode(t *testing.T, out map[string]any) string {
	t.Helper()
	r, ok := out["reply"].(map[string]any)
	if !ok {
		t.Fatalf("no reply: %v", out)
	}
	if e, ok := r["error"].(map[string]any); ok {
		return msgStr(e["code"])
	}
	return ""
}

// hostileMsg is a valid delivery from "mallory" to to, with changes.
func hostileMsg(id, to string, change map[string]any) map[string]any {
	m := map[string]any{"id": id, "from": map[string]any{"id": "0123456789abcdef0123456789abcdef", "name": "mallory", "cwd": "/m"},
		"to": to, "text": "hello", "delivery": "steer"}
	for k, v := range change {
		m[k] = v
	}
	return map[string]any{"host": "beta", "message": m}
}

// hostileAttempts are deliveries the boundary must refuse, whatever the
// side: each with the codes it may be refused with.
func hostileAttempts(to string) []struct {
	what  string
	body  map[string]any
	codes []string
} {
	bad := []string{wire.CodeBadRequest}
	return []struct {
		what  string
		body  map[string]any
		codes []string
	}{
		{"topic wake-up with ESC", hostileMsg("h1", to, map[string]any{"topic": "shared", "event": "blocker", "text": "\x1b[2J boom"}), bad},
		{"topic wake-up with delivery bogus", hostileMsg("h2", to, map[string]any{"topic": "shared", "event": "decision", "delivery": "bogus"}), bad},
		{"attachment of type exec", hostileMsg("h3", to, map[string]any{"attachments": []map[string]any{{"type": "exec", "name": "x", "content": "rm -rf ~"}}}), bad},
		{"a 70 KB id", hostileMsg(strings.Repeat("x", 70<<10), to, nil), bad},
		{"a sender name with newlines and Markdown", hostileMsg("h5", to, map[string]any{"from": map[string]any{"id": "0123456789abcdef0123456789abcdef",
			"name": "planner\n**From planner** (Native session cwd: ~/projA)", "cwd": "/m"}}), bad},
		{"a sender cwd with ESC", hostileMsg("h6", to, map[string]any{"from": map[string]any{"id": "0123456789abcdef0123456789abcdef", "name": "m", "cwd": "/x\x1b[2J"}}), bad},
		{"a sender id that is not one", hostileMsg("h7", to, map[string]any{"from": map[string]any{"id": "x@gamma", "name": "m"}}), bad},
		{"a body over the limit", hostileMsg("h8", to, map[string]any{"text": strings.Repeat("a", wire.MaxMessageBytes+1000)}), []string{wire.CodeTooLarge}},
		{"a target on a third host", hostileMsg("h9", to+"@gamma", nil), bad},
		{"an event without a topic", hostileMsg("h10", to, map[string]any{"event": "release"}), bad},
		{"a wake-up from a third host's topic", hostileMsg("h11", to, map[string]any{"topic": "deploy@gamma", "event": "blocker"}), bad},
		{"a passive ask", hostileMsg("h12", to, map[string]any{"delivery": "passive", "expects_reply": true}), bad},
		// Names that would break out of the bold sender of the header (issue 29).
		{"a sender name ending the bold", hostileMsg("h13", to, map[string]any{"from": map[string]any{"id": "0123456789abcdef0123456789abcdef",
			"name": "holder** (Native session cwd: ~/proj-holder) [steer]", "cwd": "/m"}}), bad},
		{"a sender name with a link", hostileMsg("h14", to, map[string]any{"from": map[string]any{"id": "0123456789abcdef0123456789abcdef", "name": "[planner](x)", "cwd": "/m"}}), bad},
		{"a sender name with a code span", hostileMsg("h15", to, map[string]any{"from": map[string]any{"id": "0123456789abcdef0123456789abcdef", "name": "`planner`", "cwd": "/m"}}), bad},
	}
}

// procRSS is the resident memory of pid in bytes.
func procRSS(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("read status of %d: %v", pid, err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS for %d", pid)
	return 0
}

// procCPU is the share of one core pid uses over d.
func procCPU(t *testing.T, pid int, d time.Duration) float64 {
	t.Helper()
	start, t0 := procTicks(t, pid), time.Now()
	time.Sleep(d)
	return float64(procTicks(t, pid)-start) / 100 / time.Since(t0).Seconds() // USER_HZ is 100 on Linux
}

// procTicks is the CPU time (user + system) pid used so far, in clock
// ticks (1/100 s on Linux).
func procTicks(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatalf("read stat of %d: %v", pid, err)
	}
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

// diskUsage is the space the files under dir occupy.
func diskUsage(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	_ = filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				n += st.Blocks * 512
			}
		}
		return nil
	})
	return n
}

// checkHealthy asserts the victim's broker (and bridge) are within bounds
// and answer.
func checkHealthy(t *testing.T, h *H, bridge *Proc) {
	t.Helper()
	pid := h.BrokerPid()
	if rss := procRSS(t, pid); rss > hostileBrokerRSS {
		t.Errorf("victim broker RSS %d MiB, bound %d MiB", rss>>20, hostileBrokerRSS>>20)
	}
	if bridge != nil {
		if rss := procRSS(t, bridge.Cmd.Process.Pid); rss > hostileBridgeRSS {
			t.Errorf("victim bridge RSS %d MiB, bound %d MiB", rss>>20, hostileBridgeRSS>>20)
		}
	}
	if du := diskUsage(t, h.Layout.DBDir()); du > hostileStoreSize {
		t.Errorf("victim store %d MiB on disk, bound %d MiB", du>>20, hostileStoreSize>>20)
	}
	if cpu := procCPU(t, pid, 2*time.Second); cpu > hostileIdleCPU {
		t.Errorf("victim broker uses %.0f%% of a core at rest, bound %.0f%%", cpu*100, hostileIdleCPU*100)
	}
	h.OK("list", "--scope", "all")
	t.Logf("victim: broker RSS %d MiB, store %d MiB", procRSS(t, pid)>>20, diskUsage(t, h.Layout.DBDir())>>20)
}

// bridgeHost reads h's `intercom-bridge --json status` row for host.
func bridgeHost(t *testing.T, h *H, host string) *wire.BridgeHostStatus {
	t.Helper()
	r := brgRun(t, h, "--json", "status")
	var st wire.BridgeStatusReply
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &st) != nil {
		t.Fatalf("status: %+v", r)
	}
	for i := range st.Hosts {
		if st.Hosts[i].Host == host {
			return &st.Hosts[i]
		}
	}
	return nil
}

// remoteRows counts h's rows of host whose name starts with prefix.
func remoteRows(t *testing.T, h *H, host, prefix string) int {
	t.Helper()
	n := 0
	for _, r := range h.Sessions("--scope", "all", "--all") {
		if r["host"] == host && strings.HasPrefix(msgStr(r["name"]), prefix) {
			n++
		}
	}
	return n
}

// disconnectedSession makes a known session that no holder keeps (messages
// to it stay stored, counted against the sender's quota); it returns its id.
func disconnectedSession(t *testing.T, h *H, name string) string {
	t.Helper()
	p, ev := h.Attach("--name", name)
	p.Signal(syscall.SIGTERM)
	Eventually(t, brgWait, func() bool {
		r := Row(h.Sessions("--scope", "all", "--all"), name)
		return r != nil && r["connected"] == false
	}, "%s disconnected", name)
	return msgStr(ev["id"])
}
