//go:build unix

// Package unixsock is a client connection to a Unix stream socket made of
// plain system calls: blocking reads and writes on the socket, bounded by
// the socket's own timeouts (SO_RCVTIMEO, SO_SNDTIMEO). It is what a hook
// process talks to the broker through (internal/hookclient; internal/spawn
// dials with it): package net, its resolver's initialisation, the runtime's
// network poller (an epoll instance, its registrations and the goroutine
// hand-offs of every read) cost a one-request process more than its
// request. Long-lived clients make a net.Conn of it (pkg/intercom).
package unixsock

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"
)

// ErrTimeout is a read or write that met the connection's deadline.
var ErrTimeout error = timeoutError{}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }
func (timeoutError) Is(err error) bool {
	return err == os.ErrDeadlineExceeded
}

// Conn is one connection, for one goroutine at a time but for Interrupt,
// which may come from any.
type Conn struct {
	mu sync.Mutex // guards fd against Interrupt racing Close
	fd int
}

// Dial connects to the socket at path, waiting at most timeout for the
// listener to accept (its backlog may be full).
func Dial(path string, timeout time.Duration) (*Conn, error) {
	syscall.ForkLock.RLock() // no child started meanwhile inherits the socket
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, &os.SyscallError{Syscall: "socket", Err: err}
	}
	c := &Conn{fd: fd}
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		c.Close()
		return nil, err
	}
	for {
		err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: path})
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		c.Close()
		if err == syscall.EAGAIN || err == syscall.EWOULDBLOCK {
			return nil, fmt.Errorf("dial unix %s: %w", path, ErrTimeout)
		}
		return nil, fmt.Errorf("dial unix %s: %w", path, &os.SyscallError{Syscall: "connect", Err: err})
	}
	return c, nil
}

// SetDeadline bounds each later read and write to end by t (the zero
// time: no bound). A deadline in the past fails the next one at once.
func (c *Conn) SetDeadline(t time.Time) error {
	var tv syscall.Timeval // zero: no timeout
	if !t.IsZero() {
		tv = syscall.NsecToTimeval(max(time.Until(t), time.Microsecond).Nanoseconds())
	}
	for _, opt := range []int{syscall.SO_RCVTIMEO, syscall.SO_SNDTIMEO} {
		if err := syscall.SetsockoptTimeval(c.fd, syscall.SOL_SOCKET, opt, &tv); err != nil {
			return &os.SyscallError{Syscall: "setsockopt", Err: err}
		}
	}
	return nil
}

// Read reads what is there, waiting for something up to the deadline
// (ErrTimeout); io.EOF once the peer closed or Interrupt was called.
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, err := syscall.Read(c.fd, p)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK:
			return 0, ErrTimeout
		case err != nil:
			return 0, &os.SyscallError{Syscall: "read", Err: err}
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// Write writes all of p, or fails (ErrTimeout at the deadline).
func (c *Conn) Write(p []byte) (int, error) {
	done := 0
	for done < len(p) {
		n, err := syscall.Write(c.fd, p[done:])
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK:
			return done, ErrTimeout
		case err != nil:
			return done, &os.SyscallError{Syscall: "write", Err: err}
		}
		done += n
	}
	return done, nil
}

// Interrupt ends a read or write in progress, and every later one (shut
// down both ways: the peer sees the connection end).
func (c *Conn) Interrupt() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd >= 0 {
		_ = syscall.Shutdown(c.fd, syscall.SHUT_RDWR)
	}
}

// File returns a new *os.File on a duplicate of the connection's socket
// (for net.FileConn); c stays open.
func (c *Conn) File() (*os.File, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd < 0 {
		return nil, errors.New("unixsock: connection closed")
	}
	syscall.ForkLock.RLock()
	fd, err := syscall.Dup(c.fd)
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, &os.SyscallError{Syscall: "dup", Err: err}
	}
	return os.NewFile(uintptr(fd), "unix-socket"), nil
}

// Close closes the connection.
func (c *Conn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd < 0 {
		return nil
	}
	err := syscall.Close(c.fd)
	c.fd = -1
	if err != nil {
		return &os.SyscallError{Syscall: "close", Err: err}
	}
	return nil
}
