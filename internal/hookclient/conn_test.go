package hookclient

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/internal/spawn"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// The protocol's edges, against a scripted server on a Unix socket: what
// the real broker never sends, a hook must still survive with one clear
// error (and never read without bound).

// scripted serves one connection: it greets with greeting, reads the
// client's CONNECT and SUB, then answers each PUB with answer(reply
// subject) and writes what the client sent after its requests to sent.
func scripted(t *testing.T, greeting string, answer func(reply string) string) (home string, sent chan string) {
	t.Helper()
	home = t.TempDir()
	sock := filepath.Join(home, "broker.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	t.Setenv("INTERCOM_SOCKET", sock)
	sent = make(chan string, 16)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.WriteString(c, greeting)
		r := bufio.NewReader(c)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			f := strings.Fields(line)
			switch {
			case len(f) == 4 && f[0] == "PUB":
				n, _ := strconv.Atoi(f[3])
				if _, err := io.CopyN(io.Discard, r, int64(n)+2); err != nil {
					return
				}
				_, _ = io.WriteString(c, answer(f[2]))
			case len(f) > 0 && (f[0] == "CONNECT" || f[0] == "SUB"):
			default:
				sent <- strings.TrimSpace(line)
			}
		}
	}()
	return home, sent
}

const info = "INFO {\"server_id\":\"x\",\"max_payload\":1024}\r\n"

func request(t *testing.T, home string) (wire.InboxWaitReply, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Connect(ctx, Options{Home: home, NoSpawn: true})
	if err != nil {
		return wire.InboxWaitReply{}, err
	}
	defer c.Close()
	res, err := call(ctx, c, wire.SubjInboxWait, wire.InboxWaitRequest{SessionID: "s"}, decodeJSON[wire.InboxWaitReply])
	if err != nil {
		return wire.InboxWaitReply{}, err
	}
	return *res, nil
}

// A PING is answered, and +OK, a later INFO and a late reply to an
// earlier request are passed over on the way to the reply.
func TestRequestSkipsWhatIsNotItsReply(t *testing.T) {
	home, sent := scripted(t, info, func(reply string) string {
		body := `{"result":{"ready":true}}`
		return "PING\r\n+OK\r\n" + info +
			"MSG _INBOX.stale.1 1 5\r\nstale\r\n" +
			fmt.Sprintf("MSG %s 1 %d\r\n%s\r\n", reply, len(body), body)
	})
	res, err := request(t, home)
	if err != nil || !res.Ready {
		t.Fatalf("request: %+v, %v; want the reply after the noise", res, err)
	}
	if got := <-sent; got != "PONG" {
		t.Fatalf("the client answered PING with %q", got)
	}
}

// What the client must refuse: a greeting that is not INFO, a refusal, a
// reply larger than the server's max_payload, a line without end, a
// malformed message line, and no responders on a plain request.
func TestProtocolErrors(t *testing.T) {
	long := strings.Repeat("x", maxLine+10)
	for _, tc := range []struct {
		name, greeting, reply, want string
	}{
		{"not nats", "HTTP/1.1 200 OK\r\n", "", "not NATS INFO"},
		{"refused", info, "-ERR 'Permissions Violation'\r\n", "broker refused: Permissions Violation"},
		{"too large", info, "MSG %s 1 99999999\r\n", "bad message size"},
		{"no line end", info, long, "longer than"},
		{"malformed", info, "MSG %s\r\n", "malformed message line"},
		{"unknown line", info, "WHAT\r\n", "unexpected line"},
		{"no crlf", info, "MSG %s 1 2\r\nokXY", "not ended by CRLF"},
		{"no responders", info, "HMSG %s 1 16 16\r\nNATS/1.0 503\r\n\r\n\r\n", "no responders"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home, _ := scripted(t, tc.greeting, func(reply string) string {
				if strings.Contains(tc.reply, "%s") {
					return fmt.Sprintf(tc.reply, reply)
				}
				return tc.reply
			})
			_, err := request(t, home)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want one saying %q", err, tc.want)
			}
			if !errors.Is(err, spawn.ErrNoBroker) {
				t.Fatalf("error %v is not spawn.ErrNoBroker", err)
			}
		})
	}
}

// A broker that never answers costs the request its deadline, not more.
func TestRequestDeadline(t *testing.T) {
	home, _ := scripted(t, info, func(string) string { return "" })
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	c, err := Connect(ctx, Options{Home: home, NoSpawn: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.SetState(ctx, "s", "idle", nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a request the broker never answers: %v; want the context's deadline", err)
	}
}

// A context cancelled while a request waits (no deadline: the hook's
// --hold wait, ended by a signal) ends it at once with the context's
// error; the request timeout of a context without a deadline is a broker
// that does not answer.
func TestRequestCancelAndTimeout(t *testing.T) {
	home, _ := scripted(t, info, func(string) string { return "" })
	ctx, cancel := context.WithCancel(context.Background())
	c, err := Connect(ctx, Options{Home: home, NoSpawn: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.AfterFunc(50*time.Millisecond, cancel)
	t0 := time.Now()
	if _, err := c.SetState(ctx, "s", "idle", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("a request whose context is cancelled: %v; want context.Canceled", err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Fatalf("the cancelled request returned after %v", d)
	}

	home, _ = scripted(t, info, func(string) string { return "" })
	c2, err := Connect(context.Background(), Options{Home: home, NoSpawn: true, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c2.SetState(context.Background(), "s", "idle", nil); !errors.Is(err, spawn.ErrNoBroker) || !strings.Contains(err.Error(), "no answer") {
		t.Fatalf("a request the broker never answers, no context deadline: %v; want ErrNoBroker, no answer", err)
	}
}

// Connect sends nothing: the CONNECT and SUB go out with the first request,
// in one write, before the server's INFO is read (here the server writes
// its INFO only after it has them, as a slow gateway would).
func TestGreetingGoesWithTheFirstRequest(t *testing.T) {
	home := t.TempDir()
	sock := filepath.Join(home, "broker.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	t.Setenv("INTERCOM_SOCKET", sock)
	first := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 4096)
		n, _ := c.Read(buf)
		first <- string(buf[:n])
		f := strings.Fields(strings.Split(string(buf[:n]), "\r\n")[2]) // PUB subject reply size
		reply := `{"result":{"ready":true}}`
		_, _ = fmt.Fprintf(c, "%sMSG %s 1 %d\r\n%s\r\n", info, f[2], len(reply), reply)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Connect(ctx, Options{Home: home, NoSpawn: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := call(ctx, c, wire.SubjInboxWait, wire.InboxWaitRequest{SessionID: "s"}, decodeJSON[wire.InboxWaitReply])
	if err != nil || !res.Ready {
		t.Fatalf("request: %+v %v", res, err)
	}
	got := <-first
	lines := strings.Split(got, "\r\n")
	if len(lines) < 4 || !strings.HasPrefix(lines[0], "CONNECT {") || !strings.HasPrefix(lines[1], "SUB _INBOX.") || !strings.HasPrefix(lines[2], "PUB "+wire.SubjInboxWait+" ") {
		t.Fatalf("the first write was %q; want CONNECT, SUB and the request's PUB", got)
	}
	if c.k.maxPayload != 1024 {
		t.Fatalf("max_payload %d, want the INFO's 1024", c.k.maxPayload)
	}
}
