package store

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// TestMessageLogSlotsWithinATransaction: a transaction sees its own puts
// and removals first: a slot put then removed, or committed then removed,
// reads as empty; a put over a slot replaces what was there (its own put
// or the committed message); removing an empty slot finds nothing.
func TestMessageLogSlotsWithinATransaction(t *testing.T) {
	t.Parallel()
	s, _ := openTemp(t)
	putMessages(t, s, "a", 1, 2)
	at := func(seq uint64) Slot { return InboxSlot("a", seq) }
	msg := func(id string, seq uint64) *wire.Message { return &wire.Message{ID: id, Seq: seq, To: "a"} }
	update(t, s, func(txn *Txn) error {
		if err := txn.PutMessage(at(3), msg("x3", 3)); err != nil {
			return err
		}
		if gone, _ := txn.DeleteMessageAt(at(3)); !gone {
			t.Errorf("DeleteMessageAt of this transaction's put found nothing")
		}
		if _, err := txn.MessageAt(at(3)); !errors.Is(err, ErrNotFound) {
			t.Errorf("slot put then removed: %v, want ErrNotFound", err)
		}
		if gone, _ := txn.DeleteMessageAt(at(3)); gone {
			t.Errorf("second DeleteMessageAt of a removed put found something")
		}
		if gone, _ := txn.DeleteMessageAt(at(1)); !gone {
			t.Errorf("DeleteMessageAt(committed) found nothing")
		}
		if _, err := txn.MessageAt(at(1)); !errors.Is(err, ErrNotFound) {
			t.Errorf("committed slot removed: %v, want ErrNotFound", err)
		}
		if gone, _ := txn.DeleteMessageAt(at(9)); gone {
			t.Errorf("DeleteMessageAt(empty slot) found something")
		}
		for _, id := range []string{"y2", "z2"} { // over the committed m2, then over its own put
			if err := txn.PutMessage(at(2), msg(id, 2)); err != nil {
				return err
			}
		}
		if m, err := txn.MessageAt(at(2)); err != nil || m.ID != "z2" {
			t.Errorf("slot 2 in the transaction: %+v, %v, want z2", m, err)
		}
		return nil
	})
	if got := inboxIDs(t, s, "a"); got != "z2" {
		t.Fatalf("inbox after the transaction %q, want z2", got)
	}
	if at, ok := mustView(t, s, "z2"); !ok || at != InboxSlot("a", 2) {
		t.Fatalf("z2 indexed at %+v (%t)", at, ok)
	}
}

func mustView(t *testing.T, s *Store, id string) (at Slot, ok bool) {
	t.Helper()
	_ = s.View(func(txn *Txn) error { at, ok = txn.MessageSlot(id); return nil })
	return at, ok
}

// TestMessageLogBoxOrderAfterGapsAndRefills: sequence numbers stored out
// of order, refilled after removal (a dead place alive again) and after
// most of a box was removed (its layout compacted) still read in order,
// in memory and after a reopen.
func TestMessageLogBoxOrderAfterGapsAndRefills(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "db")
	s := openDir(t, dir)
	seqs := func(from, to uint64) []uint64 {
		var out []uint64
		for i := from; i <= to; i++ {
			out = append(out, i)
		}
		return out
	}
	ids := func(ss ...[]uint64) string {
		var b bytes.Buffer
		for _, part := range ss {
			for _, q := range part {
				if b.Len() > 0 {
					b.WriteByte(' ')
				}
				fmt.Fprint(&b, "m", q)
			}
		}
		return b.String()
	}
	putMessages(t, s, "a", seqs(10, 200)...)
	putMessages(t, s, "a", 5, 1, 3) // before the head, out of order
	if got, want := inboxIDs(t, s, "a"), ids([]uint64{1, 3, 5}, seqs(10, 200)); got != want {
		t.Fatalf("out of order puts read %q", got)
	}
	deleteMessages(t, s, 50)
	putMessages(t, s, "a", 50) // its dead place alive again
	deleteMessages(t, s, seqs(11, 180)...)
	if got, want := inboxIDs(t, s, "a"), ids([]uint64{1, 3, 5, 10}, seqs(181, 200)); got != want {
		t.Fatalf("after removing most of the box: %q, want %q", got, want)
	}
	putMessages(t, s, "a", 100, 7) // into the compacted box
	want := ids([]uint64{1, 3, 5, 7, 10, 100}, seqs(181, 200))
	if got := inboxIDs(t, s, "a"); got != want {
		t.Fatalf("after refills: %q, want %q", got, want)
	}
	s = reopen(t, s, dir, nil)
	defer s.Close()
	if got := inboxIDs(t, s, "a"); got != want {
		t.Fatalf("after reopen: %q, want %q", got, want)
	}
	deleteMessages(t, s, 1, 3, 5, 7, 10, 100)
	deleteMessages(t, s, seqs(181, 200)...)
	if got := inboxIDs(t, s, "a"); got != "" {
		t.Fatalf("emptied box reads %q", got)
	}
	noLogKeys(t, s, "after every message was removed")
}

// TestMessageLogCacheStaysBounded: entry values are cached up to
// logCacheBytes, the oldest evicted first; an entry over a quarter of it is
// never cached; every message reads back whole whether cached or not.
func TestMessageLogCacheStaysBounded(t *testing.T) {
	t.Parallel()
	s, _ := openTemp(t)
	body := func(seq uint64, n int) string {
		return fmt.Sprintf("%d:", seq) + string(bytes.Repeat([]byte{'a' + byte(seq%26)}, n))
	}
	const mib = 1 << 20
	var want []string
	for seq := uint64(1); seq <= 10; seq++ { // one entry of about 1 MiB per commit
		text := body(seq, mib)
		want = append(want, text)
		update(t, s, func(txn *Txn) error {
			return txn.PutMessage(InboxSlot("a", seq), &wire.Message{ID: fmt.Sprint("m", seq), Seq: seq, Text: text})
		})
	}
	big := body(11, logCacheBytes/4+1)
	update(t, s, func(txn *Txn) error {
		return txn.PutMessage(InboxSlot("a", 11), &wire.Message{ID: "m11", Seq: 11, Text: big})
	})
	want = append(want, big)
	check := func(when string) {
		t.Helper()
		s.boxes.mu.RLock()
		size, n := s.boxes.cacheSize, len(s.boxes.cache)
		s.boxes.mu.RUnlock()
		if size > logCacheBytes || n >= 10 {
			t.Fatalf("%s: cache holds %d entries, %d bytes; want at most %d bytes", when, n, size, logCacheBytes)
		}
		var got []string
		if err := s.View(func(txn *Txn) error {
			return txn.ScanInbox("a", func(_ Slot, m wire.Message) bool { got = append(got, m.Text); return true })
		}); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: read %d messages, want %d", when, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: message %d differs (%d bytes, want %d)", when, i+1, len(got[i]), len(want[i]))
			}
		}
	}
	check("after the commits")
	check("after reading everything once") // evicted entries read from Badger, cached again
	at, ok := mustView(t, s, "m11")
	if !ok {
		t.Fatal("m11 not indexed")
	}
	l, _ := s.boxes.live(at)
	if s.boxes.cached(l.ref.n) != nil {
		t.Fatalf("the %d-byte entry was cached", len(big))
	}
	var v []byte
	if err := s.View(func(txn *Txn) error { var err error; v, err = txn.MessageBytesAt(at); return err }); err != nil || !bytes.Contains(v, []byte(big)) {
		t.Fatalf("MessageBytesAt(uncached entry): %d bytes, %v", len(v), err)
	}
}
