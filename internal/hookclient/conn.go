package hookclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/intercom-dev/intercom/internal/jsonfields"
	"github.com/intercom-dev/intercom/internal/unixsock"
)

// The NATS client protocol, as much of it as one-shot request/reply needs
// (https://docs.nats.io/reference/reference-protocols/nats-protocol): our
// CONNECT and one SUB for the replies, sent with the first request, and
// the server's INFO, read before its reply (newConn); then PUB with a
// reply subject per request, read back as MSG or, for "no responders",
// an HMSG whose status line is 503. PING is answered with PONG; +OK, PONG
// and later INFO lines are skipped; -ERR ends the connection.

// maxLine bounds one protocol line (an INFO line is a few hundred bytes).
const maxLine = 64 << 10

// defaultMaxPayload bounds a reply when the server's INFO names no limit
// (the broker's server allows 8 MiB).
const defaultMaxPayload = 8 << 20

// errNoResponders: nothing subscribes to the request's subject.
var errNoResponders = errors.New("no responders")

// errUnheard: the connection ended before the broker said a word (its
// INFO, written as soon as it accepts), so no live broker read the request.
var errUnheard = errors.New("the connection ended before the broker's greeting")

// conn is one NATS connection through the broker's gateway, used by one
// goroutine at a time: blocking system calls on the socket (package
// unixsock), no network poller.
type conn struct {
	c          *unixsock.Conn
	r          *bufio.Reader
	inbox      string // reply subjects are inbox + "." + n
	next       uint64
	maxPayload int
	hello      []byte // CONNECT and SUB, sent with the first request
	greeted    bool   // the server's INFO was read
}

// greeting is the connection's CONNECT and the SUB of its replies.
func greeting(inbox string) []byte {
	return []byte(`CONNECT {"verbose":false,"pedantic":false,"lang":"go","version":"intercom-hook","protocol":1,"headers":true,"no_responders":true,"name":"intercom-hook"}` +
		"\r\nSUB " + inbox + ".* 1\r\n")
}

// newConn is a connection on c that has sent and read nothing yet: its
// CONNECT and SUB go out in one write with the first request, and the
// server's INFO, written when it accepted, is read before that request's
// reply. So a hook waits for the broker once (for its reply), not also
// for the INFO before it may speak: the broker accepts and greets while
// the hook reads its binding. The server reads what a client sent before
// its INFO as it reads what came after (NATS clients pipeline), and
// answers a refused CONNECT with -ERR, which the first request returns.
func newConn(c *unixsock.Conn) *conn {
	// The inbox needs to be unique, not secret (as nats.go's nuid): no
	// crypto/rand, whose first use costs a hook its generator's start.
	inbox := "_INBOX." + strconv.FormatUint(rand.Uint64(), 36) + strconv.FormatUint(rand.Uint64(), 36)
	// 4 KiB: an INFO or a reply without messages is a few hundred bytes, a
	// larger payload is read past the buffer, and each zeroed page of a
	// buffer costs a fresh process a page fault.
	return &conn{c: c, r: bufio.NewReaderSize(c, 4<<10), inbox: inbox, maxPayload: defaultMaxPayload, hello: greeting(inbox)}
}

// readInfo reads the server's INFO, the first line on the connection,
// and takes its max_payload.
func (k *conn) readInfo() error {
	if _, err := k.r.Peek(1); err != nil {
		if isTimeout(err) {
			return fmt.Errorf("read the broker's greeting: %w", err)
		}
		return fmt.Errorf("read the broker's greeting: %w (%w)", errUnheard, err)
	}
	line, err := k.line()
	if err != nil {
		return fmt.Errorf("read the broker's greeting: %w", err)
	}
	rest, ok := bytes.CutPrefix(line, []byte("INFO "))
	if !ok {
		return fmt.Errorf("the broker's greeting is not NATS INFO: %.40q", line)
	}
	k.greeted = true
	var info struct { // of the INFO's fields, only this one matters here
		MaxPayload int `json:"max_payload"`
	}
	if !jsonfields.Decode(rest, jsonfields.Field{Key: "max_payload", Into: &info.MaxPayload}) {
		info.MaxPayload = 0
		_ = json.Unmarshal(rest, &info)
	}
	if info.MaxPayload > 0 {
		k.maxPayload = info.MaxPayload
	}
	return nil
}

// request publishes data to subject and returns the reply's payload.
func (k *conn) request(deadline time.Time, subject string, data []byte) ([]byte, error) {
	if err := k.c.SetDeadline(deadline); err != nil {
		return nil, err
	}
	k.next++
	reply := k.inbox + "." + strconv.FormatUint(k.next, 10)
	msg := make([]byte, 0, len(k.hello)+len(subject)+len(reply)+len(data)+32)
	msg = append(msg, k.hello...)
	msg = append(msg, "PUB "...)
	msg = append(msg, subject...)
	msg = append(msg, ' ')
	msg = append(msg, reply...)
	msg = append(msg, ' ')
	msg = strconv.AppendInt(msg, int64(len(data)), 10)
	msg = append(msg, "\r\n"...)
	msg = append(msg, data...)
	msg = append(msg, "\r\n"...)
	if _, err := k.c.Write(msg); err != nil {
		if len(k.hello) > 0 {
			if !isTimeout(err) { // the broker is gone: nothing was read
				return nil, fmt.Errorf("greet the broker: %w (%w)", errUnheard, err)
			}
			return nil, fmt.Errorf("greet the broker: %w", err)
		}
		return nil, err
	}
	k.hello = nil
	if !k.greeted {
		if err := k.readInfo(); err != nil {
			return nil, err
		}
	}
	for {
		subj, hdr, payload, err := k.read()
		if err != nil {
			return nil, err
		}
		if subj != reply {
			continue // the reply to an earlier request that gave up
		}
		if bytes.HasPrefix(hdr, []byte("NATS/1.0 503")) {
			return nil, errNoResponders
		}
		return payload, nil
	}
}

// read returns the next message (MSG or HMSG) on the connection, answering
// PING and skipping the other server lines.
func (k *conn) read() (subject string, hdr, payload []byte, err error) {
	for {
		line, err := k.line()
		if err != nil {
			return "", nil, nil, err
		}
		op, args, _ := bytes.Cut(line, []byte(" "))
		switch string(op) {
		case "MSG", "HMSG":
			return k.message(string(op) == "HMSG", args)
		case "PING":
			if _, err := io.WriteString(k.c, "PONG\r\n"); err != nil {
				return "", nil, nil, err
			}
		case "PONG", "+OK", "INFO":
		case "-ERR":
			return "", nil, nil, fmt.Errorf("broker refused: %s", bytes.Trim(args, " '"))
		default:
			return "", nil, nil, fmt.Errorf("unexpected line from the broker: %.40q", line)
		}
	}
}

// message reads a MSG (subject sid [reply] size) or HMSG (subject sid
// [reply] header-size total-size) and its payload.
func (k *conn) message(headers bool, args []byte) (string, []byte, []byte, error) {
	f := bytes.Fields(args)
	want := 3
	if headers {
		want = 4
	}
	if len(f) != want && len(f) != want+1 {
		return "", nil, nil, fmt.Errorf("malformed message line from the broker: %.60q", args)
	}
	total, err := strconv.Atoi(string(f[len(f)-1]))
	hsize := 0
	if headers && err == nil {
		hsize, err = strconv.Atoi(string(f[len(f)-2]))
	}
	if err != nil || total < 0 || hsize < 0 || hsize > total || total > k.maxPayload+maxLine {
		return "", nil, nil, fmt.Errorf("bad message size from the broker: %.60q", args)
	}
	buf := make([]byte, total+2)
	if _, err := io.ReadFull(k.r, buf); err != nil {
		return "", nil, nil, err
	}
	if !bytes.HasSuffix(buf, []byte("\r\n")) {
		return "", nil, nil, errors.New("message from the broker not ended by CRLF")
	}
	return string(f[0]), buf[:hsize], buf[hsize:total], nil
}

// line reads one CRLF-ended protocol line (without the CRLF).
func (k *conn) line() ([]byte, error) {
	var line []byte
	for {
		part, err := k.r.ReadSlice('\n')
		line = append(line, part...)
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
		if len(line) >= maxLine {
			return nil, fmt.Errorf("protocol line from the broker longer than %d bytes", maxLine)
		}
	}
	return bytes.TrimRight(line, "\r\n"), nil
}

// deadline is when a request must be answered: ctx's deadline, or
// timeout from now when ctx has none.
func deadline(ctx context.Context, timeout time.Duration) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(timeout)
}
