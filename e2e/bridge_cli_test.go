package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestBridgeCLIHelpJSONAndUsage: every intercom-bridge subcommand's --help
// has examples; --json makes every subcommand print JSON (one object per
// line); bad input is one clear line and exit 2; serve opens without NATS's
// "TLS Handshake First" warning; and a join whose every attempt is refused
// never says ready.
func TestBridgeCLIHelpJSONAndUsage(t *testing.T) {
	t.Parallel()
	h := brgNewH(t)
	for _, cmd := range [][]string{{"certs", "init"}, {"certs", "issue"}, {"certs", "revoke"}, {"certs", "crl"},
		{"serve"}, {"join"}, {"status"}, {"purge"}, {"nats-config"}} {
		r := brgRun(t, h, append(cmd, "--help")...)
		if r.Code != 0 || !strings.Contains(r.Stdout, "Examples:") || !strings.Contains(r.Stdout, "intercom-bridge "+cmd[0]) {
			t.Errorf("%v --help: exit %d, no examples:\n%s", cmd, r.Code, r.Stdout)
		}
	}

	dir := filepath.Join(t.TempDir(), "ca")
	jsonOf := func(args ...string) map[string]any {
		t.Helper()
		r := brgRun(t, h, append([]string{"--json"}, args...)...)
		var out map[string]any
		if r.Code != 0 || strings.Count(strings.TrimSpace(r.Stdout), "\n") != 0 || json.Unmarshal([]byte(r.Stdout), &out) != nil {
			t.Fatalf("--json %v: exit %d, stdout %q, stderr %q", args, r.Code, r.Stdout, r.Stderr)
		}
		return out
	}
	if out := jsonOf("certs", "init", "--dir", dir); out["ca_cert"] != filepath.Join(dir, "ca.crt") {
		t.Fatalf("certs init: %v", out)
	}
	for _, host := range []string{"alpha", "beta", "nats"} {
		if out := jsonOf("certs", "issue", "--dir", dir, "--name", host); out["host"] != host {
			t.Fatalf("certs issue: %v", out)
		}
	}
	if out := jsonOf("certs", "revoke", "--dir", dir, "--name", "beta"); out["revoked"] != "beta" {
		t.Fatalf("certs revoke: %v", out)
	}
	if out := jsonOf("certs", "crl", "--dir", dir); out["crl"] != filepath.Join(dir, "ca.crl") {
		t.Fatalf("certs crl: %v", out)
	}
	out := jsonOf("nats-config", "--cert", filepath.Join(dir, "nats.crt"), "--key", filepath.Join(dir, "nats.key"), "--ca", filepath.Join(dir, "ca.crt"), "--dir", dir)
	if conf := msgStr(out["config"]); !strings.Contains(conf, "verify_and_map: true") || !strings.Contains(conf, `user: "alpha"`) || strings.Contains(conf, `user: "beta"`) {
		t.Fatalf("nats-config (beta is revoked, alpha not): %v", out)
	}
	h.OK("list") // a broker for status and purge
	if out := jsonOf("status"); out["bridge"] != nil || out["hosts"] == nil {
		t.Fatalf("status without a bridge: %v", out)
	}
	if out := jsonOf("purge", "nobody"); out["host"] != "nobody" || out["messages"] != 0.0 {
		t.Fatalf("purge: %v", out)
	}

	tls := []string{"--cert", filepath.Join(dir, "alpha.crt"), "--key", filepath.Join(dir, "alpha.key"), "--ca", filepath.Join(dir, "ca.crt"), "--name", "alpha"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{append([]string{"serve", "--listen", "127.0.0.1:0"}, tls...), "--peer HOST"},
		{append([]string{"serve", "--listen", "127.0.0.1:0", "--peer", "alpha"}, tls...), "is this host"},
		{append([]string{"serve", "--listen", "127.0.0.1:0", "--peer", "beta", "--export", "a@b"}, tls...), "--export"},
		{append([]string{"serve", "--listen", "127.0.0.1:0", "--peer", "beta", "--max-inbox-bytes", "lots"}, tls...), "invalid size"},
		{append([]string{"join", "127.0.0.1:1", "--any-peer"}, tls...), "--server-name"},
		{append([]string{"join", "ftp://x", "--peer", "beta"}, tls...), "want host:port"},
		{[]string{"certs", "issue", "--dir", dir, "--name", "Bad Name"}, "invalid host name"},
		{[]string{"purge", "Bad Name"}, "invalid host name"},
	} {
		r := brgRun(t, h, c.args...)
		if r.Code != 2 || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 || !strings.Contains(r.Stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2, one line with %q", c.args, r.Code, r.Stderr, c.want)
		}
	}

	// serve starts quietly; a join that is refused never says ready.
	A, B := brgNewH(t), brgNewH(t)
	serve, addr := brgServe(t, A, "127.0.0.1:0", brgMat(dir, "alpha", "nats"))
	join := brgJoinRefused(t, B, addr, brgMat(dir, "beta", "alpha")) // beta is revoked
	brgAwaitLog(t, serve, 0, "link refused", "revoked")
	brgAwaitLog(t, join, 0, "link refused", "")
	if ev := join.Event(brgWait); ev["event"] != "refused" || ev["error"] == nil {
		t.Fatalf("join's event after a refusal: %v", ev)
	}
	// Refused again (its retries are logged), and still no ready.
	brgAwaitLog(t, serve, len(serve.Stderr()), "link refused", "revoked")
	for {
		select {
		case l := <-join.lines:
			if !strings.Contains(l, `"refused"`) {
				t.Fatalf("a refused join said: %s", l)
			}
			continue
		default:
		}
		break
	}
	if strings.Contains(serve.Stderr(), "Handshake First") {
		t.Fatalf("serve warns about TLS Handshake First:\n%s", serve.Stderr())
	}

	// SIGHUP re-reads the revocation list (and does not end the bridge); a
	// list past its NextUpdate refuses every peer, loudly.
	_ = serve.Cmd.Process.Signal(syscall.SIGHUP)
	brgAwaitLog(t, serve, 0, "reloading the revocation list (SIGHUP)", "")
	if r := brgRun(t, h, "certs", "crl", "--dir", dir, "--valid-for=-1h"); r.Code != 0 {
		t.Fatalf("certs crl: %+v", r)
	}
	off := len(serve.Stderr())
	brgAwaitLog(t, serve, off, "revocation list loaded", "")
	// The joining side here reads no list (a CA copy without ca.crl), so
	// that the refusal is the serving side's.
	bare := filepath.Join(t.TempDir(), "ca.crt")
	if data, err := os.ReadFile(filepath.Join(dir, "ca.crt")); err != nil || os.WriteFile(bare, data, 0o644) != nil {
		t.Fatalf("copy ca.crt: %v", err)
	}
	m := brgMat(dir, "nats", "alpha")
	m.CA = bare
	brgJoinRefused(t, brgNewH(t), addr, m)
	brgAwaitLog(t, serve, off, "link refused", "past its NextUpdate")
	select {
	case <-serve.Done():
		t.Fatalf("serve ended: %s", serve.Stderr())
	default:
	}
}
