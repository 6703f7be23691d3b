package e2e

// History across a bridge (issue 34): a message to a session of another
// host is kept in the sender's history when the remote broker has stored it
// (the bridge settles the outbox entry), and in the recipient's history when
// the recipient acknowledges it; each side finds it once with intercom
// search and lists it with intercom history.

import (
	"testing"
)

func TestBridgeHistoryKeptOnBothSides(t *testing.T) {
	t.Parallel()
	p := brgLinked(t)

	r := brgSend(t, p.A, "a1", "b1@beta", "frobnicate the bridged widget")
	if !r.RemoteStored {
		t.Fatalf("send a1 → b1@beta: %+v", r)
	}
	brgExpect(t, p.b1, "frobnicate the bridged widget")
	r2 := brgSend(t, p.B, "b1", "a1@alpha", "reticulate the remote splines")
	if !r2.RemoteStored {
		t.Fatalf("send b1 → a1@alpha: %+v", r2)
	}
	brgExpect(t, p.a1, "reticulate the remote splines")

	for _, c := range []struct {
		side     *H
		query    string
		id       string
		from, to string
	}{
		{p.A, "frobnicate", r.ID, "a1", "b1@beta"},             // sent from alpha: kept when beta stored it
		{p.B, "frobnicate", r.ID + "@alpha", "a1@alpha", "b1"}, // acknowledged by b1 on beta
		{p.B, "reticulate", r2.ID, "b1", "a1@alpha"},           // sent from beta
		{p.A, "reticulate", r2.ID + "@beta", "b1@beta", "a1"},  // acknowledged by a1 on alpha
	} {
		found := awaitHistory(t, c.side, 1, "search", c.query)
		it := found.Items[0]
		if it.Message == nil || it.Message.ID != c.id || it.From != c.from || it.To != c.to {
			t.Fatalf("search %s: %+v (message %+v); want %s from %s to %s", c.query, it, it.Message, c.id, c.from, c.to)
		}
	}
	// Each side lists both messages, once each, in the order they were sent.
	for _, side := range []struct {
		h   *H
		ids []string
	}{{p.A, []string{r.ID, r2.ID + "@beta"}}, {p.B, []string{r.ID + "@alpha", r2.ID}}} {
		out := awaitHistory(t, side.h, 2, "history")
		for i, id := range side.ids {
			if m := out.Items[i].Message; m == nil || m.ID != id {
				t.Fatalf("history item %d: %+v, want message %s", i, m, id)
			}
		}
	}
}
