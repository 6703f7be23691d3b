package agentsession

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// hookLimit is hooks.MaxContext, the hand-over a hook answer carries.
const hookLimit = 9000

func FuzzSplit(f *testing.F) {
	f.Add("héllo wörld\nline two\n", 64)
	f.Add(strings.Repeat("ü", 500), 70)
	f.Fuzz(func(t *testing.T, text string, size int) {
		if size < 0 || size > 1<<16 || !utf8.ValidString(text) {
			return
		}
		parts := split(text, size)
		if strings.Join(parts, "") != text {
			t.Fatalf("parts do not join back to the text")
		}
		for _, p := range parts {
			if len(p) > max(size, 64) || !utf8.ValidString(p) {
				t.Fatalf("part of %d bytes (size %d), valid %v", len(p), size, utf8.ValidString(p))
			}
		}
	})
}

func msg(id string, n int) wire.Message {
	return wire.Message{ID: id, From: wire.Peer{Name: "peer"}, Text: strings.Repeat("y", n)}
}

func renderID(m wire.Message) string { return "[" + m.ID + "] " + m.Text + "\n" }

func TestComposeWholeMessagesOnly(t *testing.T) {
	var msgs []wire.Message
	for i := range 50 {
		msgs = append(msgs, msg(string(rune('a'+i%26))+string(rune('a'+i/26)), 500))
	}
	b := compose(msgs, DeliverOptions{Render: renderID, Limit: hookLimit}, nil)
	if len(b.Text) > hookLimit || b.Progress != nil {
		t.Fatalf("composed %d bytes, progress %v; want <= %d, none", len(b.Text), b.Progress, hookLimit)
	}
	if len(b.Ack) == 0 || len(b.Ack) >= len(msgs) || b.Waiting != len(msgs)-len(b.Ack) {
		t.Fatalf("acked %d, waiting %d of %d", len(b.Ack), b.Waiting, len(msgs))
	}
	for i, id := range b.Ack {
		if id != msgs[i].ID || !strings.Contains(b.Text, renderID(msgs[i])) {
			t.Fatalf("ack %d is %s, want %s rendered whole", i, id, msgs[i].ID)
		}
	}
	if strings.Contains(b.Text, renderID(msgs[len(b.Ack)])) {
		t.Fatal("the first waiting message is in the answer too")
	}
	if !strings.Contains(b.Text, "more messages wait") {
		t.Fatalf("no line about the waiting messages: ...%s", b.Text[len(b.Text)-150:])
	}
}

func TestComposeLongMessageInParts(t *testing.T) {
	long := msg("big", 25000)
	small := msg("small", 10)
	msgs := []wire.Message{long, small}
	var got strings.Builder
	var prog *Progress
	for call := 1; ; call++ {
		if call > 10 {
			t.Fatal("the long message never completed")
		}
		b := compose(msgs, DeliverOptions{Render: renderID, Limit: hookLimit}, prog)
		if len(b.Text) > hookLimit {
			t.Fatalf("part %d: %d bytes, want <= %d", call, len(b.Text), hookLimit)
		}
		if !strings.Contains(b.Text, "message big from peer, part ") {
			t.Fatalf("part %d has no part header: %.120q", call, b.Text)
		}
		head, body, _ := strings.Cut(b.Text, ":\n")
		if i := strings.LastIndex(body, "\n["); i >= 0 {
			body = body[:i] // the part's closing line
		}
		got.WriteString(body)
		if b.Progress == nil {
			if len(b.Ack) != 1 || b.Ack[0] != "big" || call < 3 {
				t.Fatalf("completed after %d parts with ack %v (%s)", call, b.Ack, head)
			}
			break
		}
		if len(b.Ack) != 0 {
			t.Fatalf("part %d acknowledged %v before the last part", call, b.Ack)
		}
		prog = b.Progress
	}
	if got.String() != renderID(long) {
		t.Fatalf("parts joined: %d bytes, want the whole rendering (%d)", got.Len(), len(renderID(long)))
	}
	// The in-flight message is gone (read with intercom inbox): go on.
	left, prog := pick([]wire.Message{small}, &Progress{ID: "big", Next: 1, Parts: 3}, DeliverOptions{})
	b := compose(left, DeliverOptions{Render: renderID, Limit: hookLimit}, prog)
	if len(b.Ack) != 1 || b.Ack[0] != "small" {
		t.Fatalf("after a vanished part delivery: ack %v", b.Ack)
	}
}

// TestPick: the one choice of what a hand-over carries.
func TestPick(t *testing.T) {
	steer := func(id string) wire.Message { return wire.Message{ID: id, Delivery: wire.DeliverySteer} }
	passive := func(id string) wire.Message { return wire.Message{ID: id, Delivery: wire.DeliveryPassive} }
	waiting := []wire.Message{steer("a"), passive("p"), steer("b"), passive("q")}
	inFlight := func(id string) *Progress { return &Progress{ID: id, Next: 1, Parts: 3} }
	for _, tc := range []struct {
		name     string
		recorded *Progress
		o        DeliverOptions
		want     string // ids, in order
		prog     bool
	}{
		{"all, oldest first", nil, DeliverOptions{}, "a p b q", false},
		{"wake only leaves passive", nil, DeliverOptions{WakeOnly: true}, "a b", false},
		{"the message in flight goes first", inFlight("b"), DeliverOptions{}, "b a p q", true},
		{"a passive one in flight goes on even when waking only", inFlight("q"), DeliverOptions{WakeOnly: true}, "q a b", true},
		{"continue only: nothing but the message in flight", inFlight("p"), DeliverOptions{WakeOnly: true, ContinueOnly: true}, "p", true},
		{"in flight but gone: the rest", inFlight("gone"), DeliverOptions{WakeOnly: true}, "a b", false},
		{"continue only, gone: nothing", inFlight("gone"), DeliverOptions{ContinueOnly: true}, "", false},
	} {
		msgs, prog := pick(waiting, tc.recorded, tc.o)
		var ids []string
		for _, m := range msgs {
			ids = append(ids, m.ID)
		}
		if got := strings.Join(ids, " "); got != tc.want || (prog != nil) != tc.prog {
			t.Errorf("%s: picked %q, in flight %v; want %q, %v", tc.name, got, prog != nil, tc.want, tc.prog)
		}
	}
	if waiting[2].ID != "b" {
		t.Fatal("pick changed the waiting messages")
	}
}

// A hand-over is one digest: the supervisor's message (SupervisorFromEnv
// names it) and an ask go first, and only what it rendered is acknowledged.
func TestComposeIsADigestByPriority(t *testing.T) {
	var msgs []wire.Message
	for i := range 30 {
		msgs = append(msgs, msg(fmt.Sprintf("m%02d", i), 400))
	}
	msgs[20].ExpectsReply = true
	msgs[25].From = wire.Peer{ID: "sup-id", Name: "boss"}
	b := compose(msgs, DeliverOptions{Render: renderID, Limit: 3000, Supervisor: "boss"}, nil)
	if len(b.Ack) < 2 || b.Ack[0] != "m25" || b.Ack[1] != "m20" {
		t.Fatalf("acked %v: want the supervisor's m25, then the ask m20, first", b.Ack)
	}
	for _, m := range msgs {
		if strings.Contains(b.Text, renderID(m)) != slices.Contains(b.Ack, m.ID) {
			t.Fatalf("%s: rendered and acknowledged disagree", m.ID)
		}
	}
	if b.Waiting != len(msgs)-len(b.Ack) || !strings.Contains(b.Text, fmt.Sprintf("%d more messages wait", b.Waiting)) {
		t.Fatalf("waiting %d:\n%s", b.Waiting, b.Text)
	}
}

func TestSupervisorFromEnv(t *testing.T) {
	for _, k := range []string{"INTERCOM_SUPERVISOR", "INTERCOM_RUN_ID", "INTERCOM_CHILD_AGENT", "INTERCOM_CHILD_INDEX"} {
		t.Setenv(k, "")
	}
	if s := SupervisorFromEnv(); s != "" {
		t.Fatalf("outside a run: %q", s)
	}
	t.Setenv("INTERCOM_SUPERVISOR", "lead")
	t.Setenv("INTERCOM_RUN_ID", "r1")
	t.Setenv("INTERCOM_CHILD_AGENT", "worker")
	t.Setenv("INTERCOM_CHILD_INDEX", "0")
	if s := SupervisorFromEnv(); s != "lead" {
		t.Fatalf("in a run: %q, want lead", s)
	}
}
