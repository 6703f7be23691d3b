package netimpair

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// newPair is a switch with two hosts for one test, removed when it ends;
// it skips when the machine cannot make one (Check).
func newPair(t *testing.T, subnet int) (*Net, *Host, *Host) {
	t.Helper()
	if err := Check(); err != nil {
		t.Skip(err)
	}
	n := New(subnet, fmt.Sprint(os.Getpid()%100000))
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	a, err := n.AddHost("a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := n.AddHost("b")
	if err != nil {
		t.Fatal(err)
	}
	return n, a, b
}

// serve opens a TCP listener on h's address, inside h, and hands each
// connection to handle.
func serve(t *testing.T, h *Host, handle func(net.Conn)) net.Listener {
	t.Helper()
	var ln net.Listener
	if err := h.Do(func() (err error) {
		ln, err = net.Listen("tcp", h.Addr.String()+":0")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go handle(c)
		}
	}()
	return ln
}

// dial connects from h to addr, inside h.
func dial(h *Host, addr string, timeout time.Duration) (net.Conn, error) {
	var c net.Conn
	err := h.Do(func() (err error) {
		c, err = net.DialTimeout("tcp", addr, timeout)
		return err
	})
	return c, err
}

// TestImpairedLinkCarriesTCPIntact: 256 KiB echoed across links that drop
// 30% of packets each way, delay them 50 ms with 30 ms of jitter and reorder some
// arrive intact (TCP repairs it all); the switch did drop and reorder.
func TestImpairedLinkCarriesTCPIntact(t *testing.T) {
	n, a, b := newPair(t, 201)
	ln := serve(t, a, func(c net.Conn) { defer c.Close(); _, _ = io.Copy(c, c) })
	c, err := dial(b, ln.Addr().String(), 10*time.Second)
	if err != nil {
		t.Fatalf("dial over a clean link: %v", err)
	}
	defer c.Close()
	bad := Impairment{Loss: 0.3, Delay: 50 * time.Millisecond, Jitter: 30 * time.Millisecond, Reorder: 0.1}
	a.Set(bad)
	b.Set(bad)
	want := make([]byte, 256<<10)
	_, _ = rand.Read(want)
	go func() { _, _ = c.Write(want) }()
	got := make([]byte, len(want))
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Minute))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("echo through the impaired link: %v (%+v)", err, n.Stats())
	}
	if !bytes.Equal(got, want) {
		t.Fatal("echo through the impaired link: bytes differ")
	}
	st := n.Stats()
	if st.Dropped == 0 || st.Reordered == 0 || st.Forwarded == 0 {
		t.Fatalf("stats %+v: want drops, reorders and forwards", st)
	}
	t.Logf("%+v", st)
}

// TestCutLinkCarriesNothing: a cut host's connection attempts time out
// (nothing refuses them: packets just stop), and work again once restored.
func TestCutLinkCarriesNothing(t *testing.T) {
	n, a, b := newPair(t, 202)
	ln := serve(t, a, func(c net.Conn) { c.Close() })
	b.Cut(true)
	_, err := dial(b, ln.Addr().String(), 2*time.Second)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("dial across a cut: %v, want a timeout", err)
	}
	b.Cut(false)
	c, err := dial(b, ln.Addr().String(), 10*time.Second)
	if err != nil {
		t.Fatalf("dial after the cut was restored: %v", err)
	}
	c.Close()
	if st := n.Stats(); st.Cut == 0 {
		t.Fatalf("stats %+v: want packets cut", st)
	}
}
