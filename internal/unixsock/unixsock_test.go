//go:build unix

package unixsock

import (
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// listen serves one connection at a socket in a temporary directory and
// hands the server's side to serve.
func listen(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { l.Close(); <-done })
	go func() {
		defer close(done)
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		serve(c)
	}()
	return path
}

// A connection writes and reads; a deadline ends a read that waits, as a
// timeout (os.ErrDeadlineExceeded); the peer's close is io.EOF.
func TestReadWriteDeadlineEOF(t *testing.T) {
	release := make(chan struct{})
	path := listen(t, func(c net.Conn) {
		buf := make([]byte, 5)
		if _, err := io.ReadFull(c, buf); err != nil {
			return
		}
		_, _ = c.Write(append([]byte("re:"), buf...))
		<-release
	})
	c, err := Dial(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if n, err := c.Write([]byte("hello")); n != 5 || err != nil {
		t.Fatalf("write: %d %v", n, err)
	}
	buf := make([]byte, 8)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "re:hello" {
		t.Fatalf("read %q %v", buf, err)
	}
	if err := c.SetDeadline(time.Now().Add(30 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) || !errors.Is(err, ErrTimeout) {
		t.Fatalf("read past the deadline: %v, want a timeout", err)
	}
	if err := c.SetDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	close(release)
	if _, err := c.Read(buf); err != io.EOF {
		t.Fatalf("read after the peer closed: %v, want io.EOF", err)
	}
}

// Interrupt ends a read that waits with no deadline (from another
// goroutine), and Close after it is fine.
func TestInterruptEndsABlockedRead(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	path := listen(t, func(net.Conn) { <-hold })
	c, err := Dial(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(30*time.Millisecond, c.Interrupt)
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("interrupted read: %v, want io.EOF", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c.Interrupt() // after Close: nothing to shut down
	if err := c.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

// Dial of a path with no socket says so (fs.ErrNotExist); File gives a
// socket net.FileConn takes.
func TestDialMissingAndFile(t *testing.T) {
	if _, err := Dial(filepath.Join(t.TempDir(), "none.sock"), time.Second); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("dial of a missing socket: %v", err)
	}
	path := listen(t, func(c net.Conn) { _, _ = c.Write([]byte("hi")) })
	c, err := Dial(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.File()
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	nc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	buf := make([]byte, 2)
	if _, err := io.ReadFull(nc, buf); err != nil || string(buf) != "hi" {
		t.Fatalf("read through net.FileConn: %q %v", buf, err)
	}
	if _, err := c.File(); err == nil {
		t.Fatal("File of a closed connection worked")
	}
}

// A write the peer does not take in time ends at the deadline (a
// timeout, with what was written), and a write after Interrupt fails.
func TestWriteDeadlineAndAfterInterrupt(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	path := listen(t, func(net.Conn) { <-hold }) // never reads
	c, err := Dial(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	n, err := c.Write(make([]byte, 64<<20))
	if !errors.Is(err, os.ErrDeadlineExceeded) || n >= 64<<20 {
		t.Fatalf("write to a peer that never reads: %d bytes, %v; want a timeout", n, err)
	}
	c.Interrupt()
	if err := c.SetDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("x")); err == nil {
		t.Fatal("a write after Interrupt succeeded")
	}
}
