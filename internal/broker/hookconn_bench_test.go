package broker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/internal/paths"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// BenchmarkHookConnection is what a hook asks of the broker, over and
// over: a new connection through the socket, the server's INFO, CONNECT,
// SUB and one boundary request (a state report of a held session), its
// reply, close. Besides ns/op it reports the wait from the dial to the
// INFO (info-ns/op). Run it with -cpuprofile to see the broker's side.
func BenchmarkHookConnection(b *testing.B) {
	home := filepath.Join(b.TempDir(), "home")
	l, err := paths.Resolve(home, "")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(l.SocketDir())
	br, err := Start(Options{Layout: l, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	ctx := context.Background()
	c, err := intercom.Connect(ctx, intercom.Options{Home: home, NoSpawn: true, Timeout: bounded})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	s, err := c.Attach(ctx, intercom.AttachOptions{Name: "agent", Cwd: "/proj", NoDeliver: true})
	if err != nil {
		b.Fatal(err)
	}
	req, _ := json.Marshal(wire.BoundaryRequest{SessionID: s.ID(), Status: "tool:Bash", Fetch: true})
	var toInfo time.Duration
	b.ResetTimer()
	for range b.N {
		d, err := hookConnection(l.Socket, req)
		if err != nil {
			b.Fatal(err)
		}
		toInfo += d
	}
	b.ReportMetric(float64(toInfo.Nanoseconds())/float64(b.N), "info-ns/op")
}

// hookConnection makes one hook's connection and request, as
// internal/hookclient does, and returns the wait for the INFO.
func hookConnection(socket string, req []byte) (time.Duration, error) {
	t0 := time.Now()
	nc, err := net.Dial("unix", socket)
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(bounded))
	r := bufio.NewReader(nc)
	info, err := r.ReadSlice('\n')
	if err != nil || !bytes.HasPrefix(info, []byte("INFO ")) {
		return 0, fmt.Errorf("INFO: %q, %v", info, err)
	}
	toInfo := time.Since(t0)
	msg := "CONNECT {\"verbose\":false,\"pedantic\":false,\"lang\":\"go\",\"version\":\"bench\",\"protocol\":1,\"headers\":true,\"no_responders\":true}\r\n" +
		"SUB _INBOX.bench.* 1\r\nPUB " + wire.SubjBoundary + " _INBOX.bench.1 " + strconv.Itoa(len(req)) + "\r\n" + string(req) + "\r\n"
	if _, err := io.WriteString(nc, msg); err != nil {
		return 0, err
	}
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return 0, fmt.Errorf("reply: %w", err)
		}
		switch {
		case bytes.HasPrefix(line, []byte("MSG ")):
			f := bytes.Fields(line)
			n, _ := strconv.Atoi(string(f[len(f)-1]))
			if _, err := r.Discard(n + 2); err != nil {
				return 0, err
			}
			return toInfo, nil
		case bytes.HasPrefix(line, []byte("PING")):
			_, _ = io.WriteString(nc, "PONG\r\n")
		case bytes.HasPrefix(line, []byte("-ERR")), bytes.HasPrefix(line, []byte("HMSG")):
			return 0, fmt.Errorf("reply: %q", line)
		}
	}
}
