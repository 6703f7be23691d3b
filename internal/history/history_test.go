package history_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/internal/brokertest"
	"github.com/intercom-dev/intercom/internal/history"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// deliver sends text from one session to another and acknowledges it at
// the recipient, as a holder does.
func deliver(t *testing.T, c *intercom.Client, from, to *intercom.Session, text string) {
	t.Helper()
	ctx := context.Background()
	res, err := c.Send(ctx, wire.SendRequest{From: from.ID(), To: to.ID(), Text: text})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-to.Messages():
		if m.ID != res.ID {
			t.Fatalf("got message %s, want %s", m.ID, res.ID)
		}
		if err := to.Ack(ctx, m.ID); err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("message not pushed")
	}
}

// syncUntil catches the index up until it holds n entries.
func syncUntil(t *testing.T, ix *history.Index, c *intercom.Client, n int) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := ix.Sync(ctx, c); err != nil {
			t.Fatal(err)
		}
		got, err := ix.Count(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("index holds %d entries, want %d", got, n)
		}
		time.Sleep(20 * time.Millisecond) // the history writer lingers
	}
}

func TestDeliveredMessagesAreSearchableAndPurged(t *testing.T) {
	home := brokertest.Start(t)
	c := brokertest.Connect(t, home)
	ctx := context.Background()
	alice, err := c.Attach(ctx, intercom.AttachOptions{Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	bob, err := c.Attach(ctx, intercom.AttachOptions{Name: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	deliver(t, c, alice, bob, "please deploy the frobnicator tonight")
	deliver(t, c, bob, alice, "deployed, all green")

	ix, err := history.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	syncUntil(t, ix, c, 2)

	hits, err := ix.Search(ctx, "frobnicat*", history.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].Message == nil || hits[0].FromName != "alice" || hits[0].ToName != "bob" {
		t.Fatalf("search hits = %+v", hits)
	}
	if !strings.Contains(hits[0].Snippet, history.MarkStart+"frobnicator"+history.MarkEnd) {
		t.Fatalf("snippet %q does not mark the match", hits[0].Snippet)
	}
	if hits, _ := ix.Search(ctx, "frobnicator", history.Filter{From: "bob"}); len(hits) != 0 {
		t.Fatalf("--from bob found %+v", hits)
	}

	conv, err := ix.History(ctx, history.Filter{Session: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	if len(conv) != 2 || conv[0].Message.Text != "please deploy the frobnicator tonight" || conv[1].FromName != "bob" {
		t.Fatalf("bob's history = %+v", conv)
	}

	// Lost: rebuilt from the broker's history.
	ix.Close()
	if err := removeIndex(home); err != nil {
		t.Fatal(err)
	}
	if ix, err = history.Open(home); err != nil {
		t.Fatal(err)
	}
	syncUntil(t, ix, c, 2)

	n, err := c.PurgeHistory(ctx, bob.ID(), time.Time{})
	if err != nil || n != 2 {
		t.Fatalf("purge = %d, %v; want 2", n, err)
	}
	syncUntil(t, ix, c, 0)
}
