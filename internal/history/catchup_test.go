package history

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// pages is a history of n messages served page by page as the broker
// serves them, counting how often the sessions are listed.
type pages struct {
	n     int
	lists int
}

func (p *pages) List(context.Context, intercom.ListOptions) ([]wire.Session, error) {
	p.lists++
	return []wire.Session{{ID: "id-b", Name: "bob"}}, nil
}

func (p *pages) HistoryPage(_ context.Context, after string, limit int) (wire.HistoryReply, error) {
	if limit <= 0 {
		limit = wire.MaxHistoryPage
	}
	start, _ := strconv.Atoi(strings.TrimLeft(after, "0"))
	out := wire.HistoryReply{Epoch: "0", First: fmt.Sprintf("%020d", 1)}
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for i := start + 1; i <= min(start+limit, p.n); i++ {
		out.Entries = append(out.Entries, wire.HistoryEntry{Cursor: fmt.Sprintf("%020d", i), Kind: wire.HistoryMessage, At: at,
			Message: &wire.Message{ID: fmt.Sprintf("m%d", i), Seq: uint64(i), From: wire.Peer{ID: "id-a", Name: "alice"}, To: "id-b",
				Text: fmt.Sprintf("message %d about unique%d", i, i), Delivery: wire.DeliverySteer, SentAt: at.Add(time.Duration(i) * time.Millisecond)}})
	}
	out.More = start+limit < p.n
	return out, nil
}

func segments(t *testing.T, ix *Index) int {
	t.Helper()
	var n int
	if err := ix.db.QueryRow(`SELECT count(DISTINCT segid) FROM fts_idx`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A large catch-up leaves the full-text index in one segment; a catch-up
// that finds nothing new lists no sessions; a search with and without a
// filter finds the same entry.
func TestCatchUpMergesALargeOneAndSkipsAnIdleOne(t *testing.T) {
	ctx := context.Background()
	ix, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	// mergeAfter at a test's size; three pages make three segments before
	// merging.
	ix.mergeAfter = 300
	src := &pages{n: 2*wire.MaxHistoryPage + 100}
	if added, err := ix.Sync(ctx, src); err != nil || added != src.n {
		t.Fatalf("sync added %d, %v; want %d", added, err, src.n)
	}
	if n := segments(t, ix); n != 1 {
		t.Fatalf("after a catch-up of %d the index has %d segments, want 1", src.n, n)
	}
	if src.lists != 1 {
		t.Fatalf("sessions listed %d times in one catch-up, want 1", src.lists)
	}
	if added, err := ix.Sync(ctx, src); err != nil || added != 0 || src.lists != 1 {
		t.Fatalf("idle sync: added %d, %v, sessions listed %d times in all; want 0, nil, 1", added, err, src.lists)
	}
	for _, f := range []Filter{{}, {From: "alice", To: "bob"}} {
		hits, err := ix.Search(ctx, "unique3042", f)
		if err != nil || len(hits) != 1 || hits[0].Message.ID != "m3042" || hits[0].ToName != "bob" ||
			!strings.Contains(hits[0].Snippet, MarkStart+"unique3042"+MarkEnd) {
			t.Fatalf("search with %+v: %+v, %v", f, hits, err)
		}
	}
}
