package bridge

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// Serial sends across a caught-up link are forwarded from the broker's
// announcements: each is stored on beta once and in order, and the bridge
// reads alpha's outbox only at its start and at its timer, not once per
// message.
func TestAnnouncedMessagesForwardedWithoutReadingTheOutbox(t *testing.T) {
	r := newRig(t)
	beta := r.storeBatches(t)
	const n = 40
	start := time.Now()
	want := r.sendSerially(t, n)
	beta.mu.Lock()
	defer beta.mu.Unlock()
	got := beta.texts
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("beta stored %v, want %v (in order, once)", got, want)
	}
	// One read to catch up, one per tick of the drain's timer, and one
	// after the first announcement if it came before the first read ended.
	most := int64(2 + time.Since(start)/drainEvery)
	if reads := r.side.outboxReads.Load(); reads > most {
		t.Fatalf("%d reads of the outbox for %d messages in %s; want at most %d (forwarded from their announcements)", reads, n, time.Since(start).Round(time.Millisecond), most)
	}
}

// kickMsg is an announcement of msg for beta numbered h ("" for none).
func kickMsg(msg wire.Message, h string) *nats.Msg {
	m := &nats.Msg{Subject: wire.BridgeOut("beta"), Data: mustJSON(msg), Header: nats.Header{}}
	if h != "" {
		m.Header.Set(wire.HeaderOutboxKick, h)
	}
	return m
}

// The chain of announcements: in order, they wait to be forwarded; a gap,
// a new broker run, an unnumbered or unreadable one, or too many waiting
// send the bridge back to reading the outbox; a read that ends while the
// chain held catches it up, one that the chain broke during does not.
func TestOutboxAnnouncementChain(t *testing.T) {
	r := newRig(t)
	s := r.side
	p := s.peer("beta")
	state := func() (caughtUp bool, waiting int) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return p.caughtUp, len(p.kicked)
	}
	msg := func(id string) wire.Message { return wire.Message{ID: id, To: "bob@beta", Text: id} }
	catchUp := func(read ...wire.Message) {
		t.Helper()
		s.readToEnd(p, s.beginRead(p), read)
		if up, _ := state(); !up {
			t.Fatal("a read to the end with the chain unbroken did not catch up")
		}
	}
	// The drain runs for real in the rig; a kick it takes is fine, but the
	// state is read here right after each step, under the same lock.
	s.mu.Lock()
	p.reported = false // the drain leaves the peer alone: the test drives it
	s.mu.Unlock()

	catchUp()
	s.onOutboxKick(kickMsg(msg("a"), "run1.1"))
	if up, _ := state(); up {
		t.Fatal("the first announcement of a run kept the peer caught up; want a read (a new broker's outbox may hold more)")
	}
	catchUp()
	for i, id := range []string{"b", "c"} {
		s.onOutboxKick(kickMsg(msg(id), fmt.Sprintf("run1.%d", i+2)))
	}
	if up, n := state(); !up || n != 2 {
		t.Fatalf("after two announcements in order: caught up %v, %d waiting; want caught up with 2", up, n)
	}
	if msgs, ok := s.takeKicked(p); !ok || len(msgs) != 2 || msgs[0].ID != "b" || msgs[1].ID != "c" {
		t.Fatalf("takeKicked: %v %v; want b, c in order", msgs, ok)
	}
	for _, tc := range []struct {
		what string
		m    *nats.Msg
	}{
		{"a gap", kickMsg(msg("e"), "run1.5")},
		{"a new run", kickMsg(msg("f"), "run2.6")},
		{"no number", kickMsg(msg("g"), "")},
		{"a bad number", kickMsg(msg("h"), "run2.x")},
		{"an unreadable message", &nats.Msg{Subject: wire.BridgeOut("beta"), Data: []byte("{"), Header: nats.Header{wire.HeaderOutboxKick: []string{"run9.1"}}}},
	} {
		catchUp()
		s.mu.Lock()
		s.kickRun, s.kickN = "run1", 3
		s.mu.Unlock()
		s.onOutboxKick(tc.m)
		if up, n := state(); up || n > 1 {
			t.Fatalf("after %s: caught up %v, %d waiting; want the outbox read", tc.what, up, n)
		}
	}

	// A read during which the chain breaks does not catch up.
	s.mu.Lock()
	s.kickRun, s.kickN = "run1", 10
	s.mu.Unlock()
	gen := s.beginRead(p)
	s.onOutboxKick(kickMsg(msg("x"), "run1.12"))
	s.readToEnd(p, gen, nil)
	if up, _ := state(); up {
		t.Fatal("a read the chain broke during caught up")
	}
	// Announcements that came during a read and that it returned are
	// dropped; the others wait.
	gen = s.beginRead(p)
	s.onOutboxKick(kickMsg(msg("y"), "run1.13"))
	s.onOutboxKick(kickMsg(msg("z"), "run1.14"))
	s.readToEnd(p, gen, []wire.Message{msg("y")})
	if msgs, ok := s.takeKicked(p); !ok || len(msgs) != 1 || msgs[0].ID != "z" {
		t.Fatalf("after a read that returned y: %v %v; want z alone", msgs, ok)
	}
	// Too many waiting.
	catchUp()
	s.mu.Lock()
	s.kickRun, s.kickN = "run1", 100
	s.mu.Unlock()
	for i := range maxKicked + 1 {
		s.onOutboxKick(kickMsg(msg(fmt.Sprint("q", i)), fmt.Sprintf("run1.%d", 101+i)))
	}
	if up, n := state(); up || n > 1 {
		t.Fatalf("after %d announcements waiting: caught up %v, %d waiting; want the outbox read", maxKicked+1, up, n)
	}
}
