package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// echoDialer stands in for the NATS server: each connection says INFO
// (naming no client id) and then echoes.
func echoDialer() (net.Conn, error) {
	a, b := net.Pipe()
	go func() {
		if _, err := io.WriteString(b, testInfo); err == nil {
			_, _ = io.Copy(b, b)
		}
		b.Close()
	}()
	return a, nil
}

// testInfo is the INFO line of echoDialer's connections.
const testInfo = "INFO {}\r\n"

// dialEcho connects to the gateway at path and reads the INFO line.
func dialEcho(path string) (net.Conn, error) {
	c, err := net.Dial("unix", path)
	if err != nil {
		return nil, err
	}
	b := make([]byte, len(testInfo))
	if _, err := io.ReadFull(c, b); err != nil || string(b) != testInfo {
		c.Close()
		return nil, fmt.Errorf("INFO: %q, %v", b, err)
	}
	return c, nil
}

// awaitSocket waits (bounded, not timed) until path is a socket that echoes.
func awaitSocket(t *testing.T, what, path string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if c, err := dialEcho(path); err == nil {
			_, werr := c.Write([]byte("x"))
			var b [1]byte
			_, rerr := io.ReadFull(c, b[:])
			c.Close()
			if werr == nil && rerr == nil {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: socket %s not re-created", what, path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The socket comes back after its file is removed, after its directory is
// removed, and after the directory is moved away; a connection made before
// keeps working throughout.
func TestSocketRecreated(t *testing.T) {
	t.Parallel()
	checkRecreated(t, false)
}

// Without inotify the gateway polls, and heals the same way.
func TestSocketRecreatedPolling(t *testing.T) {
	t.Parallel()
	checkRecreated(t, true)
}

func checkRecreated(t *testing.T, poll bool) {
	root := t.TempDir()
	dir := filepath.Join(root, "sock")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "broker.sock")
	g, err := Listen(path, echoDialer, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	g.noWatch = poll
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { defer close(served); _ = g.Serve(ctx) }()
	defer func() { cancel(); g.Close(); <-served }()
	awaitSocket(t, "at start", path)
	old, err := dialEcho(path)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	for what, remove := range map[string]func() error{
		"file removed":      func() error { return os.Remove(path) },
		"directory removed": func() error { return os.RemoveAll(dir) },
		"directory moved": func() error {
			return os.Rename(dir, filepath.Join(root, "moved-"+time.Now().Format("150405.000000000")))
		},
	} {
		if err := remove(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		awaitSocket(t, what, path)
		fi, err := os.Lstat(dir)
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: directory %v, mode %v", what, err, fi.Mode().Perm())
		}
		if !g.ownsPath() {
			t.Fatalf("%s: the socket at %s is not the gateway's", what, path)
		}
		if _, err := old.Write([]byte("y")); err != nil {
			t.Fatalf("%s: old connection: %v", what, err)
		}
		var b [1]byte
		if _, err := io.ReadFull(old, b[:]); err != nil || b[0] != 'y' {
			t.Fatalf("%s: old connection read %q, %v", what, b, err)
		}
	}
}
