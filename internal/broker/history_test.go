package broker

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// keptMessage is a history entry of a message from one session to another.
func keptMessage(t *testing.T, cursor uint64, from, to, text string) store.HistoryItem {
	t.Helper()
	data, err := json.Marshal(wire.Message{ID: "m-" + text, From: wire.Peer{ID: from}, To: to, Text: text})
	if err != nil {
		t.Fatal(err)
	}
	return store.HistoryItem{Cursor: cursor, Kind: store.HistoryMessage, Data: data}
}

// keepChunks writes chunks into the broker's history, as its writer does.
func (w *world) keepChunks(chunks ...[]store.HistoryItem) {
	w.t.Helper()
	if err := w.b.cmt.Wait(func(txn *store.Txn) error {
		for _, c := range chunks {
			if err := txn.PutHistory(store.NewHistoryChunk(c), time.Hour); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		w.t.Fatal(err)
	}
}

// keptTexts returns the texts (topic records: "record:<message>") of the
// history, oldest first, and its epoch.
func (w *world) keptTexts() ([]string, string) {
	w.t.Helper()
	page, err := w.b.historyPage(wire.HistoryRequest{})
	if err != nil {
		w.t.Fatal(err)
	}
	var out []string
	for _, e := range page.Entries {
		switch {
		case e.Message != nil:
			out = append(out, e.Message.Text)
		case e.Record != nil:
			out = append(out, "record:"+e.Record.Message)
		}
	}
	if len(out) > 0 && page.First != page.Entries[0].Cursor {
		w.t.Errorf("page's first cursor %s, its first entry's %s", page.First, page.Entries[0].Cursor)
	}
	return out, page.Epoch
}

func (w *world) historyChunkCount() int {
	n := 0
	_ = w.b.st.View(func(txn *store.Txn) error {
		txn.HistorySizes(func(string, int64) bool { n++; return true })
		return nil
	})
	return n
}

// TestPurgeHistoryRewritesChunks: purging one session removes its
// messages and records from the chunks that hold them and leaves every
// other session's entries, in order; purging before a time removes only
// older entries; forgetting the last sessions empties the history; each
// purge that removed something moves the epoch on.
func TestPurgeHistoryRewritesChunks(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	base := uint64(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	rec, err := store.EncodeTopicRecord(store.TopicRecord{Topic: "t", From: wire.Peer{ID: "a"}, Event: "note", Message: "a's note"})
	if err != nil {
		t.Fatal(err)
	}
	w.keepChunks(
		[]store.HistoryItem{keptMessage(t, base+1, "a", "b", "a1"), keptMessage(t, base+2, "c", "d", "c1"), keptMessage(t, base+3, "b", "a", "b1")},
		[]store.HistoryItem{keptMessage(t, base+4, "d", "c", "d1"), {Cursor: base + 5, Kind: store.HistoryRecord, Data: rec}},
		[]store.HistoryItem{keptMessage(t, base+6, "c", "d", "c2")},
	)
	_, epoch0 := w.keptTexts()

	n, err := w.b.purgeHistory("a", time.Time{})
	if err != nil || n != 3 {
		t.Fatalf("purge of a: %d, %v; want 3", n, err)
	}
	got, epoch1 := w.keptTexts()
	if want := []string{"c1", "d1", "c2"}; !slices.Equal(got, want) {
		t.Fatalf("history after purging a: %v, want %v", got, want)
	}
	if epoch1 == epoch0 {
		t.Fatalf("epoch %s unchanged by a purge", epoch1)
	}
	if n, err := w.b.purgeHistory("a", time.Time{}); err != nil || n != 0 {
		t.Fatalf("purge of a again: %d, %v; want nothing", n, err)
	}
	if _, epoch := w.keptTexts(); epoch != epoch1 {
		t.Fatalf("epoch moved by a purge that removed nothing: %s, was %s", epoch, epoch1)
	}

	n, err = w.b.purgeHistory("", time.Unix(0, int64(base+4)))
	if err != nil || n != 1 {
		t.Fatalf("purge before entry 4: %d, %v; want 1", n, err)
	}
	if got, _ := w.keptTexts(); !slices.Equal(got, []string{"d1", "c2"}) {
		t.Fatalf("history after purging before entry 4: %v", got)
	}
	if err := w.b.forgetHistory("c"); err != nil {
		t.Fatal(err)
	}
	if got, _ := w.keptTexts(); len(got) != 0 {
		t.Fatalf("history after forgetting c: %v", got)
	}
	if n := w.historyChunkCount(); n != 0 {
		t.Fatalf("%d chunks left in an empty history", n)
	}
}

// TestTrimHistoryDropsOldestChunks: over its size cap the history drops
// whole chunks, oldest first, and keeps the newest entries.
func TestTrimHistoryDropsOldestChunks(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	if err := os.MkdirAll(h.home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.layout.ConfigFile(), []byte(`{"historyMaxBytes": 8192}`), 0o600); err != nil {
		t.Fatal(err)
	}
	w := &world{testHome: h, b: h.start()}
	const chunks, per = 8, 4
	var all []string
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range chunks {
		var c []store.HistoryItem
		for j := range per {
			noise := make([]byte, 300) // random letters: chunks are packed, the cap is on disk
			for k := range noise {
				noise[k] = byte('a' + rng.IntN(26))
			}
			text := fmt.Sprintf("m%d.%d %s", i, j, noise)
			c = append(c, keptMessage(t, uint64(1+i*per+j), "a", "b", text))
			all = append(all, text)
		}
		w.keepChunks(c)
	}
	w.b.trimHistory(w.b.history())
	got, _ := w.keptTexts()
	if len(got) == 0 || len(got) == len(all) || len(got)%per != 0 {
		t.Fatalf("after the trim %d of %d entries are kept, want whole chunks and fewer", len(got), len(all))
	}
	if want := all[len(all)-len(got):]; !slices.Equal(got, want) {
		t.Fatalf("after the trim the history holds %d entries that are not the newest", len(got))
	}
	if n := w.historyChunkCount(); n != len(got)/per {
		t.Fatalf("%d chunks hold %d entries of %d each", n, len(got), per)
	}
}

// sendAcked sends n messages "<prefix> <i>" from a to b, each received
// and acknowledged by b, and returns their texts in order.
func sendAcked(t *testing.T, w *world, a, b *intercom.Session, n int, prefix string) []string {
	t.Helper()
	var texts []string
	for i := range n {
		text := fmt.Sprintf("%s %d", prefix, i)
		w.send(a, b.ID(), text)
		m := recv(t, b)
		if err := b.Ack(t.Context(), m.ID); err != nil {
			t.Fatal(err)
		}
		texts = append(texts, text)
	}
	return texts
}

// TestAckedMessagesAreKeptInOrder: acknowledged messages reach the
// history through its writer (staged by the acks, written in chunks), in
// the order they were acknowledged, each once.
func TestAckedMessagesAreKeptInOrder(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a, b := w.attach("a"), w.attach("b")
	want := sendAcked(t, w, a, b, 5, "kept")
	var got []string
	eventually(t, "acked messages in the history", func() bool {
		got, _ = w.keptTexts()
		return len(got) >= len(want)
	})
	if !slices.Equal(got, want) {
		t.Fatalf("history %v, want %v", got, want)
	}
}

// TestHistoryReadersSeeWhatWasJustKept: the history writer lingers for
// more entries (historyLinger), but a page asked for right after the acks
// holds every acknowledged message, and a purge right after entries were
// staged removes them too: readers and purges flush what is staged.
func TestHistoryReadersSeeWhatWasJustKept(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a, b := w.attach("a"), w.attach("b")
	want := sendAcked(t, w, a, b, 3, "seen")
	if got, _ := w.keptTexts(); !slices.Equal(got, want) {
		t.Fatalf("history right after the acks %v, want %v", got, want)
	}

	w.b.keepHistory(keptMessage(t, 0, a.ID(), b.ID(), "staged").Data)
	if _, err := w.b.purgeHistory(a.ID(), time.Time{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := w.keptTexts(); len(got) != 0 {
		t.Fatalf("history after purging a's entries just staged: %v, want none", got)
	}
}
