package broker

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// rawSend sends req as a plain NATS request and returns the reply's bytes.
func rawSend(t *testing.T, nc *nats.Conn, req wire.SendRequest) []byte {
	t.Helper()
	data, _ := json.Marshal(req)
	m, err := nc.Request(wire.SubjSend, data, bounded)
	if err != nil {
		t.Fatal(err)
	}
	return m.Data
}

// A lean send is answered with the recipient's id and name only; a send
// that does not ask for it (every client before it) gets the whole row.
func TestSendLeanReply(t *testing.T) {
	w := newWorld(t)
	sink := w.attach("sink", func(o *intercom.AttachOptions) { o.NoDeliver = true })
	from := w.attach("src", func(o *intercom.AttachOptions) { o.NoDeliver = true })
	lean := rawSend(t, w.c.Conn(), wire.SendRequest{From: from.ID(), To: "sink", Text: "lean", Lean: true})
	if want := `"to":{"id":"` + sink.ID() + `","name":"sink"},`; !strings.Contains(string(lean), want) {
		t.Fatalf("lean reply %s, want %s in it", lean, want)
	}
	whole := rawSend(t, w.c.Conn(), wire.SendRequest{From: from.ID(), To: "sink", Text: "whole"})
	var out wire.Reply[wire.SendReply]
	if err := json.Unmarshal(whole, &out); err != nil || out.Result == nil {
		t.Fatalf("reply %s: %v", whole, err)
	}
	if to := out.Result.To; to.ID != sink.ID() || to.Cwd != "/proj" || to.LastSeen.IsZero() || !to.Connected {
		t.Fatalf("whole reply's row %+v, want the recipient's", to)
	}
}

// Replies queued in one commit batch to one reply prefix go out as one
// batch message of a line each; a lone reply, and one to another prefix, go
// to their own subjects.
func TestBatchedSendReplies(t *testing.T) {
	w := newWorld(t)
	nc := w.c.Conn()
	got := make(chan *nats.Msg, 16)
	sub, err := nc.ChanSubscribe("_INBOX.test.>", got)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		w.b.answer.add("_INBOX.test.a", fmt.Sprint(i), []byte(fmt.Sprintf(`{"result":{"id":"m%d"}}`, i)))
	}
	w.b.answer.add("_INBOX.test.b", "7", []byte(`{"result":{"id":"lone"}}`))
	w.b.flushReplies()
	seen := map[string]string{}
	for len(seen) < 2 {
		select {
		case m := <-got:
			seen[m.Subject] = string(m.Data)
		case <-time.After(bounded):
			t.Fatalf("replies seen: %v", seen)
		}
	}
	want := "0 {\"result\":{\"id\":\"m0\"}}\n1 {\"result\":{\"id\":\"m1\"}}\n2 {\"result\":{\"id\":\"m2\"}}\n"
	if seen["_INBOX.test.a."+wire.ReplyBatchToken] != want || seen["_INBOX.test.b.7"] != `{"result":{"id":"lone"}}` {
		t.Fatalf("replies: %q", seen)
	}
}

// afterLines cuts a batch after its first n lines.
func TestAfterLines(t *testing.T) {
	text := []byte("a\nb\nc\n")
	for n, want := range map[int]int{1: 2, 2: 4, 3: 6, 9: 6} {
		if got := afterLines(text, n); got != want {
			t.Errorf("afterLines(%d) = %d, want %d", n, got, want)
		}
	}
}

// pushesTo registers a holder of sid on a raw connection, with batches or
// not, and returns what arrives on its delivery subject.
func pushesTo(t *testing.T, w *world, sid string, batches bool) <-chan *nats.Msg {
	t.Helper()
	nc := w.c.Conn()
	token := fmt.Sprintf("raw%v", batches)
	got := make(chan *nats.Msg, 1024)
	if _, err := nc.ChanSubscribe(wire.Deliver(sid, token), got); err != nil {
		t.Fatal(err)
	}
	cid, err := nc.GetClientID()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := call[wire.RegisterReply](t, w.c, wire.SubjRegister, wire.RegisterRequest{
		ID: sid, Resume: true, Name: "sink", Cwd: "/proj", ClientID: cid, Holder: true, HolderToken: token, Batches: batches,
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// A holder that takes batches is pushed its backlog in arrays, in order and
// each message once; one that does not (every holder before it) one
// message per push.
func TestBatchedBacklogPushes(t *testing.T) {
	for _, batches := range []bool{true, false} {
		t.Run(fmt.Sprintf("batches=%v", batches), func(t *testing.T) {
			w := newWorld(t)
			sink := w.attach("sink", func(o *intercom.AttachOptions) { o.NoDeliver = true })
			from := w.attach("src", func(o *intercom.AttachOptions) { o.NoDeliver = true })
			const n = 300
			ids := make([]string, n)
			for i := range n {
				ids[i] = w.send(from, "sink", fmt.Sprintf("m%d", i)).ID
			}
			got := pushesTo(t, w, sink.ID(), batches)
			var pushed []string
			arrays := 0
			for len(pushed) < n {
				var m *nats.Msg
				select {
				case m = <-got:
				case <-time.After(bounded):
					t.Fatalf("%d of %d pushed", len(pushed), n)
				}
				if strings.HasPrefix(string(m.Data), "[") {
					arrays++
				}
				msgs, err := wire.DecodePushed(m.Data, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range msgs {
					pushed = append(pushed, m.ID)
				}
			}
			for i := range n {
				if pushed[i] != ids[i] {
					t.Fatalf("push %d is %s, want %s", i, pushed[i], ids[i])
				}
			}
			if batches && arrays == 0 || !batches && arrays != 0 {
				t.Fatalf("%d batched pushes (batches %v)", arrays, batches)
			}
		})
	}
}
