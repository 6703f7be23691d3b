package render

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/intercom-dev/intercom/pkg/wire"
)

func renderMark(m wire.Message) string { return "<<" + m.ID + ">> " + m.Text + "\n" }

func TestDigestOrdersByPriorityThenArrival(t *testing.T) {
	sup := "sup-id"
	msgs := []wire.Message{
		{ID: "rest1", From: wire.Peer{ID: "p1", Name: "peer"}},
		{ID: "topic-update", From: wire.Peer{ID: "p1"}, Topic: "t", Event: wire.EventUpdate},
		{ID: "ask1", From: wire.Peer{ID: "p2"}, ExpectsReply: true},
		{ID: "blocker", From: wire.Peer{ID: "p2"}, Topic: "t", Event: wire.EventBlocker},
		{ID: "sup1", From: wire.Peer{ID: sup}},
		{ID: "person1", From: wire.Peer{ID: "p3"}, FromPerson: true},
		{ID: "decision", From: wire.Peer{ID: "p2"}, Topic: "t", Event: wire.EventDecision},
		{ID: "ask2", From: wire.Peer{ID: "p1"}, ExpectsReply: true},
		{ID: "sup2", From: wire.Peer{ID: "x", Name: sup}},
		{ID: "rest2", From: wire.Peer{ID: "p1"}},
	}
	d := BuildDigest(msgs, DigestOptions{Render: renderMark, Budget: 100000, Supervisor: sup})
	want := []string{"person1", "sup1", "sup2", "ask1", "ask2", "blocker", "decision", "rest1", "topic-update", "rest2"}
	if !slices.Equal(d.Shown, want) {
		t.Fatalf("shown %v, want %v", d.Shown, want)
	}
	last := -1
	for _, id := range want {
		i := strings.Index(d.Text, "<<"+id+">>")
		if i < last {
			t.Fatalf("%s rendered at %d, before the previous one at %d:\n%s", id, i, last, d.Text)
		}
		last = i
	}
	if d.Waiting != 0 || strings.Contains(d.Text, "more messages wait") {
		t.Fatalf("waiting %d with everything shown:\n%s", d.Waiting, d.Text)
	}
	if !strings.Contains(d.Text, "most urgent first") {
		t.Fatalf("a reordered digest does not say so:\n%s", d.Text)
	}
}

func TestDigestWithoutSupervisorKeepsPeersInArrivalOrder(t *testing.T) {
	msgs := []wire.Message{{ID: "a", From: wire.Peer{ID: "s"}}, {ID: "b", From: wire.Peer{ID: "p"}}}
	d := BuildDigest(msgs, DigestOptions{Render: renderMark, Budget: 100000})
	if !slices.Equal(d.Shown, []string{"a", "b"}) || strings.Contains(d.Text, "most urgent first") {
		t.Fatalf("shown %v:\n%s", d.Shown, d.Text)
	}
}

func TestDigestBudgetLeavesTheRestQueuedAndSaysSo(t *testing.T) {
	var msgs []wire.Message
	for i := range 50 {
		msgs = append(msgs, wire.Message{ID: fmt.Sprintf("m%02d", i), Text: strings.Repeat("x", 400)})
	}
	msgs[30].FromPerson = true
	const budget = 3000
	d := BuildDigest(msgs, DigestOptions{Render: renderMark, Budget: budget})
	if len(d.Text) > budget {
		t.Fatalf("digest of %d bytes over its budget %d", len(d.Text), budget)
	}
	if len(d.Shown) == 0 || d.Shown[0] != "m30" {
		t.Fatalf("shown %v: the person's message is not first", d.Shown)
	}
	if d.Waiting != len(msgs)-len(d.Shown) || d.Waiting == 0 {
		t.Fatalf("waiting %d, shown %d of %d", d.Waiting, len(d.Shown), len(msgs))
	}
	if !strings.Contains(d.Text, fmt.Sprintf("%d more messages wait", d.Waiting)) {
		t.Fatalf("no %q line:\n%s", fmt.Sprintf("%d more messages wait", d.Waiting), d.Text)
	}
	// Nothing acknowledged that was not rendered, nothing rendered that is
	// not acknowledged.
	for _, m := range msgs {
		rendered := strings.Contains(d.Text, "<<"+m.ID+">>")
		if rendered != slices.Contains(d.Shown, m.ID) {
			t.Fatalf("%s: rendered %v, shown %v", m.ID, rendered, slices.Contains(d.Shown, m.ID))
		}
	}
}

func TestDigestOversizeMessageIsLeftToTheCaller(t *testing.T) {
	msgs := []wire.Message{
		{ID: "small", Text: "hi"},
		{ID: "big", Text: strings.Repeat("x", 5000), ExpectsReply: true},
	}
	d := BuildDigest(msgs, DigestOptions{Render: renderMark, Budget: 2000})
	if d.Oversize == nil || d.Oversize.ID != "big" || d.Text != "" || len(d.Shown) != 0 || d.Waiting != 1 {
		t.Fatalf("got oversize %v, text %q, shown %v, waiting %d", d.Oversize, d.Text, d.Shown, d.Waiting)
	}
}

func TestDigestOfNothingIsEmpty(t *testing.T) {
	if d := BuildDigest(nil, DigestOptions{Render: renderMark, Budget: 9000}); d.Text != "" || d.Shown != nil {
		t.Fatalf("got %+v", d)
	}
}

func TestWakeHeldIsToldToReaderAndSender(t *testing.T) {
	m := wire.Message{ID: "m1", From: wire.Peer{Name: "pong"}, Text: "hi", Delivery: wire.DeliverySteer, WakeHeld: wire.WakeHeldLoop}
	if got := ForAgent(m, false); !strings.Contains(got, "wake-ups between you and pong are paused") {
		t.Fatalf("the reader is not told of the paused pair:\n%s", got)
	}
	m.WakeHeld = wire.WakeHeldBudget
	if got := ForAgent(m, false); !strings.Contains(got, "did not wake you") {
		t.Fatalf("the reader is not told of the wake budget:\n%s", got)
	}
	m.WakeHeld = ""
	if got := ForAgent(m, false); strings.Contains(got, "intercom: ") {
		t.Fatalf("a message that woke its reader carries a note:\n%s", got)
	}
	if note := WakeHeldNote(wire.WakeHeldBudget, "ping"); !strings.Contains(note, "did not wake ping") {
		t.Fatalf("sender's note %q", note)
	}
	if WakeHeldNote("", "ping") != "" {
		t.Fatal("a note for a steer that woke its reader")
	}
}
