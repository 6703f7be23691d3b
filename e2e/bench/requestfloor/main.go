// Command requestfloor is the bench's second floor for a hook: the least a
// process can do that asks the broker one thing. It dials the broker's
// socket ($INTERCOM_SOCKET) with bare system calls, reads the server's
// INFO, sends CONNECT, one subscription and one request (ic.v1.ping), waits
// for the reply and prints "{}" as a hook with nothing to say does. It
// links no NATS client and no net package, as intercom-hook does not, so
// that what intercom-hook costs above it is the hook's own work.
package main

import (
	"bytes"
	"os"
	"syscall"
)

func main() {
	if err := ping(os.Getenv("INTERCOM_SOCKET")); err != nil {
		os.Stderr.WriteString("requestfloor: " + err.Error() + "\n")
		os.Exit(1)
	}
	os.Stdout.WriteString("{}\n")
}

// ping makes one request to the broker at socket and reads its reply.
func ping(socket string) error {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	if err := syscall.Connect(fd, &syscall.SockaddrUnix{Name: socket}); err != nil {
		return err
	}
	var buf []byte
	chunk := make([]byte, 4096)
	// until reads until buf holds want, then drops what came before it.
	until := func(want string) error {
		for {
			if i := bytes.Index(buf, []byte(want)); i >= 0 {
				buf = buf[i+len(want):]
				return nil
			}
			n, err := syscall.Read(fd, chunk)
			if err != nil {
				return err
			}
			if n == 0 {
				return syscall.ECONNRESET
			}
			buf = append(buf, chunk[:n]...)
		}
	}
	if err := until("\r\n"); err != nil { // INFO {...}
		return err
	}
	req := "CONNECT {\"verbose\":false,\"pedantic\":false,\"headers\":true,\"no_responders\":true,\"protocol\":1}\r\n" +
		"SUB _INBOX.floor 1\r\nPUB ic.v1.ping _INBOX.floor 2\r\n{}\r\n"
	if _, err := syscall.Write(fd, []byte(req)); err != nil {
		return err
	}
	return until("MSG _INBOX.floor ")
}
