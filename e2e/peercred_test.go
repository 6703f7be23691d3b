package e2e

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/internal/testenv"
)

// fndRawClientEnv makes a copy of this test binary act as a raw socket
// client: it connects to the named socket, reads what the server says first
// and prints a fndRawResult as JSON. This runs in init, before TestMain, so
// the child does not build anything.
const fndRawClientEnv = "INTERCOM_E2E_RAW_CLIENT"

type fndRawResult struct {
	UID     int    `json:"uid"`
	DialErr string `json:"dial_err,omitempty"`
	Data    string `json:"data"`
	EOF     bool   `json:"eof"`
	Timeout bool   `json:"timeout"`
	Err     string `json:"err,omitempty"`
}

func init() {
	if sock := os.Getenv(fndRawClientEnv); sock != "" {
		res := fndRawClient(sock)
		_ = json.NewEncoder(os.Stdout).Encode(res)
		os.Exit(0)
	}
}

func fndRawClient(sock string) fndRawResult {
	res := fndRawResult{UID: os.Getuid()}
	c, err := net.DialTimeout("unix", sock, 5*time.Second)
	if err != nil {
		res.DialErr = err.Error()
		return res
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4096)
	n, err := c.Read(buf)
	res.Data = string(buf[:n])
	var ne net.Error
	switch {
	case errors.Is(err, io.EOF):
		res.EOF = true
	case errors.As(err, &ne) && ne.Timeout():
		res.Timeout = true
	case err != nil:
		// ECONNRESET also means the server closed on us.
		res.EOF = errors.Is(err, syscall.ECONNRESET)
		res.Err = err.Error()
	}
	return res
}

// fndRunRaw runs the raw client from bin, optionally as uid/gid 65534.
func fndRunRaw(t *testing.T, bin, sock string, asNobody bool) fndRawResult {
	t.Helper()
	c := exec.Command(bin)
	c.Dir = filepath.Dir(bin)
	c.Env = []string{fndRawClientEnv + "=" + sock, "PATH=/usr/bin:/bin"}
	if asNobody {
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	var stderr strings.Builder
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		t.Fatalf("raw client (nobody=%v): %v\nstderr: %s", asNobody, err, stderr.String())
	}
	var res fndRawResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("raw client output %q: %v", out, err)
	}
	return res
}

// fndCopyExe copies the running test binary into a fresh 0755 directory so
// that another user can execute it.
func fndCopyExe(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "ic-e2e-raw-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "rawclient")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// The gateway checks SO_PEERCRED: another uid is cut off before NATS says
// anything, even when file modes would let it in.
func TestFoundationPeerCredRefusesOtherUID(t *testing.T) {
	t.Parallel()
	testenv.UID(t, 65534, "the SO_PEERCRED test runs a client as another uid (nobody)")
	h := newH(t)
	fndNoIdleExit(h) // raw connections never complete a NATS handshake, so they do not count as clients
	h.OK("list")
	pid := fndOneBroker(t, h)
	bin := fndCopyExe(t)

	// Same uid: the NATS greeting arrives.
	root := fndRunRaw(t, bin, h.Layout.Socket, false)
	if root.DialErr != "" || !strings.HasPrefix(root.Data, "INFO ") {
		t.Fatalf("same-uid client got %+v, want the NATS INFO line", root)
	}

	// Open the file modes so only SO_PEERCRED stands in the way.
	dir := h.Layout.SocketDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(h.Layout.Socket, 0o777); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = os.Chmod(h.Layout.Socket, 0o600)
		_ = os.Chmod(dir, 0o700)
	})

	other := fndRunRaw(t, bin, h.Layout.Socket, true)
	if other.UID != 65534 {
		t.Fatalf("raw client ran as uid %d, want 65534", other.UID)
	}
	if other.DialErr != "" {
		t.Fatalf("nobody could not even connect (%s); the modes were opened, so the test proves nothing", other.DialErr)
	}
	if strings.Contains(other.Data, "INFO") || other.Data != "" {
		t.Fatalf("other uid received %q from the gateway", other.Data)
	}
	if !other.EOF || other.Timeout {
		t.Fatalf("other uid's connection was not closed by the gateway: %+v", other)
	}
	if log := fndBrokerLog(h); !strings.Contains(log, "refused connection from another user") || !strings.Contains(log, "65534") {
		t.Fatalf("broker.log does not record the refusal:\n%s", log)
	}

	// The broker is unaffected and still greets its own user.
	if again := fndRunRaw(t, bin, h.Layout.Socket, false); !strings.HasPrefix(again.Data, "INFO ") {
		t.Fatalf("same-uid client after the refusal got %+v", again)
	}
	h.OK("list")
	if got := fndOneBroker(t, h); got != pid {
		t.Fatalf("broker changed %d -> %d", pid, got)
	}
}
