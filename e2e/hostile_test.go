package e2e

// Hostile peers and a corrupt store: a client that speaks NATS directly
// through the gateway (malformed requests, an oversize payload, a ping flood,
// a forged push, a foreign ack) must never crash or confuse the broker, and
// a broken store must make the broker refuse to start loudly, never wipe it.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/pkg/wire"
)

type hostileDialer struct{ sock string }

func (d hostileDialer) Dial(_, _ string) (net.Conn, error) {
	return net.DialTimeout("unix", d.sock, 5*time.Second)
}

// hostileConn dials h's gateway with a plain nats.go client (no intercom
// client library). Async errors reported by the server go to errs.
func hostileConn(t *testing.T, h *H, name string, errs chan<- error) *nats.Conn {
	t.Helper()
	opts := []nats.Option{
		nats.SetCustomDialer(hostileDialer{h.Layout.Socket}),
		nats.SkipHostLookup(),
		nats.Name(name),
		nats.NoReconnect(),
		nats.Timeout(5 * time.Second),
	}
	if errs != nil {
		opts = append(opts, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case errs <- err:
			default:
			}
		}))
	}
	nc, err := nats.Connect("nats://intercom.invalid:4222", opts...)
	if err != nil {
		t.Fatalf("raw nats connect through the gateway: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// hostilePing asserts the broker answers a well-formed ping on nc.
func hostilePing(t *testing.T, nc *nats.Conn, when string) {
	t.Helper()
	m, err := nc.Request(wire.SubjPing, []byte(`{}`), 10*time.Second)
	if err != nil {
		t.Fatalf("%s: ping: %v", when, err)
	}
	var r wire.Reply[wire.Empty]
	if err := json.Unmarshal(m.Data, &r); err != nil || r.Error != nil || r.Result == nil {
		t.Fatalf("%s: ping reply %q (err %v)", when, m.Data, err)
	}
}

func hostileSamePid(t *testing.T, h *H, pid int, when string) {
	t.Helper()
	if pids := h.BrokerPids(); len(pids) != 1 || pids[0] != pid {
		t.Fatalf("%s: broker pids %v, want exactly the original %d (it crashed or was replaced)", when, pids, pid)
	}
}

// TestFaultHostilePeers drives the broker with a raw, hostile NATS client.
func TestFaultHostilePeers(t *testing.T) {
	t.Parallel()
	h := newMsgH(t)
	victim, vev := h.Attach("--name", "victim")
	victimID := msgStr(vev["id"])
	pids := h.BrokerPids()
	if len(pids) != 1 {
		t.Fatalf("broker pids at start: %v", pids)
	}
	pid := pids[0]

	nc := hostileConn(t, h, "hostile", nil)
	hostilePing(t, nc, "before")

	// (a) Malformed requests on every API subject: each gets a JSON error
	// envelope, none crashes the broker.
	subjects := []string{
		wire.SubjRegister, wire.SubjUnreg, wire.SubjList, wire.SubjState, wire.SubjSend, wire.SubjAck,
		wire.SubjInbox, wire.SubjPending, wire.SubjForget, wire.SubjAskCancel, wire.SubjAskWait, wire.SubjPing,
		wire.SubjSubscribe, wire.SubjUnsub, wire.SubjPublish, wire.SubjTopics, wire.SubjTrace, wire.SubjInboxWait,
		wire.SubjBridgePresence, wire.SubjBridgeDeliver, wire.SubjBridgeOutbox, wire.SubjBridgeAck, wire.SubjBridgeTopic,
	}
	if len(subjects) != 23 {
		t.Fatalf("subject list has %d entries", len(subjects))
	}
	// Payloads that no request type can decode: bad_request, always.
	undecodable := map[string][]byte{
		"open brace":   []byte(`{`),
		"empty":        {},
		"random bytes": {0xff, 0xfe, 0x00, 0x01, '{', 0x80, 0xc3, 0x28, '"', 0x7f},
		"deep nesting": []byte(strings.Repeat("[", 100000)),
		"trailing":     []byte(`{} {}`),
	}
	// Payloads that are JSON but of the wrong shape: an error with code
	// bad_request or not_found; or, on the subjects whose request is valid
	// with every field at its zero value, a result, the same as for {}
	// (a wrong-shape field read as absent, nothing else); never anything
	// else.
	wrongShape := map[string][]byte{
		"array":        []byte(`[]`),
		"number from":  []byte(`{"from":1}`),
		"string":       []byte(`"x"`),
		"null fields":  []byte(`{"session_id":null,"ids":[null],"to":{"a":1},"text":[]}`),
		"bool for obj": []byte(`{"subscribe":true,"message":false,"host":7}`),
	}
	zeroValued := map[string]bool{wire.SubjList: true, wire.SubjAskCancel: true, wire.SubjPing: true, wire.SubjTopics: true}
	// gist is what must match between a zero-valued request's result and
	// {}'s: the whole reply, or for list the session ids (rows carry
	// times).
	gist := func(subj string, data []byte) string {
		if subj != wire.SubjList {
			return string(data)
		}
		var r wire.Reply[wire.ListReply]
		if err := json.Unmarshal(data, &r); err != nil || r.Result == nil {
			t.Fatalf("list reply %q: %v", data, err)
		}
		var ids []string
		for _, s := range r.Result.Sessions {
			ids = append(ids, s.ID)
		}
		slices.Sort(ids)
		return strings.Join(ids, ",")
	}
	check := func(subj, what string, payload []byte, strict bool) {
		t.Helper()
		m, err := nc.Request(subj, payload, 10*time.Second)
		if err != nil {
			t.Fatalf("%s with %s: no reply: %v (broker pids %v)", subj, what, err, h.BrokerPids())
		}
		var env map[string]json.RawMessage
		if err := json.Unmarshal(m.Data, &env); err != nil {
			t.Fatalf("%s with %s: reply is not a JSON object: %q", subj, what, m.Data)
		}
		_, hasRes := env["result"]
		rawErr, hasErr := env["error"]
		if hasRes == hasErr || len(env) != 1 {
			t.Fatalf("%s with %s: reply %s, want exactly one of error/result", subj, what, m.Data)
		}
		if !hasErr {
			if strict {
				t.Fatalf("%s with %s: accepted (%s), want a bad_request error", subj, what, m.Data)
			}
			if !zeroValued[subj] {
				t.Fatalf("%s with %s: accepted (%s); only %v take a zero-valued request", subj, what, m.Data, slices.Sorted(maps.Keys(zeroValued)))
			}
			empty, err := nc.Request(subj, []byte(`{}`), 10*time.Second)
			if err != nil {
				t.Fatalf("%s with {}: no reply: %v", subj, err)
			}
			if got, want := gist(subj, m.Data), gist(subj, empty.Data); got != want {
				t.Fatalf("%s with %s: accepted as %s, but {} gives %s", subj, what, got, want)
			}
			return
		}
		var we wire.Error
		if err := json.Unmarshal(rawErr, &we); err != nil || we.Message == "" {
			t.Fatalf("%s with %s: error %s is not {code,message}", subj, what, rawErr)
		}
		if strict && we.Code != wire.CodeBadRequest {
			t.Fatalf("%s with %s: error code %q (%s), want bad_request", subj, what, we.Code, we.Message)
		}
		if we.Code != wire.CodeBadRequest && we.Code != wire.CodeNotFound {
			t.Fatalf("%s with %s: error code %q (%s), want bad_request or not_found", subj, what, we.Code, we.Message)
		}
	}
	for _, subj := range subjects {
		for what, p := range undecodable {
			check(subj, what, p, true)
		}
		for what, p := range wrongShape {
			check(subj, what, p, false)
		}
		// Garbage without a reply subject: nothing to answer, nothing to break.
		if err := nc.Publish(subj, []byte(`{`)); err != nil {
			t.Fatal(err)
		}
	}
	hostilePing(t, nc, "after malformed requests")
	hostileSamePid(t, h, pid, "after malformed requests")

	// (b) An oversize payload (9 MiB > MaxPayload 8 MiB). nats.go refuses it
	// locally (the server announced its limit) ...
	big := bytes.Repeat([]byte("x"), 9<<20)
	nc2 := hostileConn(t, h, "hostile-big", nil)
	if err := nc2.Publish(wire.SubjPing, big); !errors.Is(err, nats.ErrMaxPayload) {
		t.Fatalf("nats.go publish of 9 MiB: %v, want ErrMaxPayload", err)
	}
	nc2.Close()
	// ... so speak the protocol by hand to make the server itself see it.
	raw := hostileRawOversize(t, h.Layout.Socket, big)
	if !strings.Contains(raw, "Maximum Payload") {
		t.Fatalf("oversize PUB: server said %q, want a Maximum Payload error", raw)
	}
	hostilePing(t, nc, "after oversize payload")
	hostileSamePid(t, h, pid, "after oversize payload")

	// (c) A flood of 10,000 pings from one connection, all in flight at once.
	const flood = 10000
	inbox := nats.NewInbox()
	replies := make(chan *nats.Msg, flood)
	sub, err := nc.ChanSubscribe(inbox, replies)
	if err != nil {
		t.Fatal(err)
	}
	_ = sub.SetPendingLimits(-1, -1)
	start := time.Now()
	for i := 0; i < flood; i++ {
		if err := nc.PublishRequest(wire.SubjPing, inbox, []byte(`{}`)); err != nil {
			t.Fatalf("flood publish %d: %v", i, err)
		}
	}
	if err := nc.FlushTimeout(10 * time.Second); err != nil {
		t.Fatalf("flush flood: %v", err)
	}
	got, bad := 0, 0
	deadline := time.After(20 * time.Second)
	for got < flood {
		select {
		case m := <-replies:
			got++
			var r wire.Reply[wire.Pong]
			if err := json.Unmarshal(m.Data, &r); err != nil || r.Error != nil || r.Result == nil {
				bad++
			}
		case <-deadline:
			t.Fatalf("ping flood: %d of %d replies within 20 s", got, flood)
		}
	}
	_ = sub.Unsubscribe()
	if bad != 0 {
		t.Fatalf("ping flood: %d replies were not a pong", bad)
	}
	t.Logf("ping flood: %d replies in %s", flood, time.Since(start).Round(time.Millisecond))
	hostilePing(t, nc, "after ping flood")
	hostileSamePid(t, h, pid, "after ping flood")

	// (d) A forged push straight to the victim's delivery subject: refused
	// by the server's permissions, never seen by the victim.
	errs := make(chan error, 16)
	nc3 := hostileConn(t, h, "hostile-forger", errs)
	forged, _ := json.Marshal(wire.Message{ID: "mforged", Text: "forged", Seq: 1})
	if err := nc3.Publish(wire.Deliver(victimID, "x"), forged); err != nil {
		t.Fatalf("publish (the refusal is asynchronous): %v", err)
	}
	if err := nc3.FlushTimeout(10 * time.Second); err != nil {
		t.Fatalf("flush after forged push: %v", err)
	}
	select {
	case err := <-errs:
		if !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), wire.Deliver(victimID, "x")) {
			t.Fatalf("async error %v, want a permissions violation for %s", err, wire.Deliver(victimID, "x"))
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no permissions violation reported for a publish to %s", wire.Deliver(victimID, "x"))
	}
	if !nc3.IsConnected() {
		t.Fatalf("forger's connection dropped (%v); a refused publish should only be reported", nc3.LastError())
	}
	h.OK("send", "victim", "marker")
	msgExpect(t, victim, "marker")

	// (e) An ack of the victim's message naming another session changes
	// nothing: the message is still delivered on resume.
	_, oev := h.Attach("--name", "other") // stays attached; killed at cleanup
	otherID := msgStr(oev["id"])
	msgDetach(t, h, victim, victimID)
	var sent struct {
		ID string `json:"id"`
	}
	h.JSON(&sent, "send", "victim", "ack-me-not")
	if sent.ID == "" {
		t.Fatal("send gave no message id")
	}
	for _, sid := range []string{otherID, "s-no-such-session", victimID + "x"} {
		body, _ := json.Marshal(wire.AckRequest{SessionID: sid, IDs: []string{sent.ID}})
		m, err := nc.Request(wire.SubjAck, body, 10*time.Second)
		if err != nil {
			t.Fatalf("foreign ack as %s: %v", sid, err)
		}
		var r wire.Reply[wire.AckReply]
		if err := json.Unmarshal(m.Data, &r); err != nil {
			t.Fatalf("foreign ack reply %q: %v", m.Data, err)
		}
		if r.Error == nil && (r.Result == nil || r.Result.Acked != 0) {
			t.Fatalf("foreign ack as %s: %s, want acked 0", sid, m.Data)
		}
	}
	victim2, _ := h.Attach("--resume", victimID)
	if m := msgExpect(t, victim2, "ack-me-not"); m["id"] != sent.ID {
		t.Fatalf("resumed victim got id %v, want %s", m["id"], sent.ID)
	}

	// Finally: the very same broker, still delivering.
	hostileSamePid(t, h, pid, "at the end")
	h.OK("send", "victim", "still-alive")
	msgExpect(t, victim2, "still-alive")
	hostilePing(t, nc, "at the end")
}

// hostileRawOversize speaks the NATS protocol directly through the gateway
// and publishes payload, returning everything the server sent after CONNECT
// until it closed the connection.
func hostileRawOversize(t *testing.T, sock string, payload []byte) string {
	t.Helper()
	c, err := net.DialTimeout("unix", sock, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(c)
	info, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(info, "INFO ") {
		t.Fatalf("raw: first line %q (%v), want INFO", info, err)
	}
	if _, err := io.WriteString(c, "CONNECT {\"verbose\":false,\"pedantic\":false,\"protocol\":1,\"name\":\"hostile-raw\"}\r\nPING\r\n"); err != nil {
		t.Fatal(err)
	}
	if l, err := br.ReadString('\n'); err != nil || l != "PONG\r\n" {
		t.Fatalf("raw: after CONNECT got %q (%v), want PONG", l, err)
	}
	var wg sync.WaitGroup
	var werr atomic.Value
	wg.Add(1)
	go func() {
		defer wg.Done()
		// The server may hang up mid-payload: a write error is expected.
		if _, err := fmt.Fprintf(c, "PUB %s %d\r\n", wire.SubjPing, len(payload)); err != nil {
			werr.Store(err)
			return
		}
		if _, err := c.Write(append(slices.Clip(payload), '\r', '\n')); err != nil {
			werr.Store(err)
		}
	}()
	var got strings.Builder
	_, rerr := io.Copy(&got, br)
	AwaitGroup(t, &wg, 30*time.Second, "the oversize PUB's writer to return")
	var ne net.Error
	if errors.As(rerr, &ne) && ne.Timeout() {
		t.Fatalf("raw: oversize PUB: connection still open after 20 s; server said %q", got.String())
	}
	if rerr != nil && !errors.Is(rerr, syscall.ECONNRESET) {
		t.Fatalf("raw: read after oversize PUB: %v (server said %q)", rerr, got.String())
	}
	t.Logf("raw oversize PUB: server said %q and closed (write err %v)", got.String(), werr.Load())
	return got.String()
}

// TestFaultCorruptStore: a store the broker cannot open makes it exit
// non-zero with a clear error and leaves the bytes as they were.
func TestFaultCorruptStore(t *testing.T) {
	t.Parallel()

	t.Run("db is a file", func(t *testing.T) {
		h := newMsgH(t)
		db := h.Layout.DBDir()
		content := []byte("not a directory\n")
		if err := os.WriteFile(db, content, 0o600); err != nil {
			t.Fatal(err)
		}
		code, stderr := hostileRunBroker(t, h)
		if code == 0 {
			t.Fatalf("broker with db as a file exited 0; stderr %q", stderr)
		}
		hostileOneLineError(t, stderr, db)
		if data, err := os.ReadFile(db); err != nil || !bytes.Equal(data, content) {
			t.Fatalf("db file after the failed start: %q (%v), want %q unchanged", data, err, content)
		}
		if pids := h.BrokerPids(); len(pids) != 0 {
			t.Fatalf("a broker still runs: %v", pids)
		}

		// The client's auto-spawn reports the broker's failure.
		r := h.Run("list")
		if r.Code != 1 {
			t.Fatalf("intercom list: exit %d, want 1\nstdout: %s\nstderr: %s", r.Code, r.Stdout, r.Stderr)
		}
		if !strings.Contains(r.Stderr, "store") || !strings.Contains(r.Stderr, db) {
			t.Fatalf("intercom list stderr %q does not name the store %s", r.Stderr, db)
		}
		t.Logf("intercom list: %s", strings.TrimSpace(r.Stderr))
		if data, err := os.ReadFile(db); err != nil || !bytes.Equal(data, content) {
			t.Fatalf("db file after intercom list: %q (%v), want %q unchanged", data, err, content)
		}
	})

	t.Run("garbage MANIFEST", func(t *testing.T) {
		h := newMsgH(t)
		// A normal run creates the store and some data in it.
		p, _ := h.Attach("--name", "keeper")
		h.OK("send", "keeper", "hello")
		msgExpect(t, p, "hello")
		h.KillBroker()
		p.Kill()

		manifest := filepath.Join(h.Layout.DBDir(), "MANIFEST")
		if _, err := os.Stat(manifest); err != nil {
			t.Fatalf("no MANIFEST after a normal run: %v", err)
		}
		garbage := make([]byte, 4096)
		for i := range garbage {
			garbage[i] = byte(i*7919 + i/3 + 0x5a)
		}
		if err := os.WriteFile(manifest, garbage, 0o600); err != nil {
			t.Fatal(err)
		}
		before := hostileSnapshot(t, h.Layout.DBDir())

		code, stderr := hostileRunBroker(t, h)
		after := hostileSnapshot(t, h.Layout.DBDir())
		data, rerr := os.ReadFile(manifest)
		if code == 0 {
			t.Fatalf("broker started on a garbage MANIFEST (exit 0); stderr %q; MANIFEST unchanged: %v; files before %v after %v",
				stderr, rerr == nil && bytes.Equal(data, garbage), before, after)
		}
		hostileOneLineError(t, stderr, h.Layout.DBDir())
		if rerr != nil || !bytes.Equal(data, garbage) {
			t.Fatalf("MANIFEST after the failed start: %d bytes (%v), want the garbage kept as is", len(data), rerr)
		}
		if len(before) < 2 || len(after) != len(before) {
			t.Fatalf("store files before the failed start %v, after %v", before, after)
		}
		for name, sum := range before {
			if after[name] != sum {
				t.Fatalf("store file %s changed by the failed start: %s -> %s", name, sum, after[name])
			}
		}
		if pids := h.BrokerPids(); len(pids) != 0 {
			t.Fatalf("a broker still runs: %v", pids)
		}
		r := h.Run("list")
		if r.Code != 1 || !strings.Contains(r.Stderr, "store") {
			t.Fatalf("intercom list on a corrupt store: exit %d, stderr %q; want 1 and a store error", r.Code, r.Stderr)
		}
		t.Logf("intercom list: %s", strings.TrimSpace(r.Stderr))
		if data, err := os.ReadFile(manifest); err != nil || !bytes.Equal(data, garbage) {
			t.Fatal("MANIFEST changed by intercom list")
		}
	})
}

// hostileRunBroker runs intercom-broker for h in the foreground and returns
// its exit code and stderr.
func hostileRunBroker(t *testing.T, h *H) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := h.cmd(ctx, "intercom-broker", "--home", h.Home, "--idle-exit", "0")
	var stderr bytes.Buffer
	c.Stdout, c.Stderr = io.Discard, &stderr
	err := c.Run()
	if ctx.Err() != nil {
		t.Fatalf("broker still running after 30 s on a broken store; stderr %q", stderr.String())
	}
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("run broker: %v", err)
		}
		code = ee.ExitCode()
	}
	return code, stderr.String()
}

// hostileOneLineError asserts that stderr states the failure in one line,
// "intercom-broker: open store <path>: ...", first. The broker also logs to
// stderr (broker.log when spawned), so that line may be followed by the same
// error as a structured log record, and by nothing else.
func hostileOneLineError(t *testing.T, stderr, path string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	if want := "intercom-broker: open store " + path + ": "; !strings.HasPrefix(lines[0], want) {
		t.Fatalf("broker stderr %q: first line does not start with %q", stderr, want)
	}
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l, "time=") || !strings.Contains(l, "level=ERROR") || !strings.Contains(l, path) {
			t.Fatalf("broker stderr %q: extra line %q is not the log record of the same error", stderr, l)
		}
	}
	t.Logf("broker refused to start: %s", lines[0])
}

// hostileSnapshot maps each file of dir to a digest of its content. LOCK
// (Badger's pid file, stale after a kill -9) is left out: it holds no data.
func hostileSnapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range ents {
		if e.Name() == "LOCK" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = fmt.Sprintf("%d:%x", len(data), sha256.Sum256(data))
	}
	return out
}
