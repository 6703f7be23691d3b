package store

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/intercom-dev/intercom/pkg/wire"
)

func storedMessage(id string) []byte { return []byte(fmt.Sprintf(`{"id":%q,"text":"hi"}`, id)) }

// reopen closes s, runs between (nil for nothing) and opens dir again.
func reopen(t *testing.T, s *Store, dir string, between func()) *Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if between != nil {
		between()
	}
	s, err := Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func update(t *testing.T, s *Store, fn func(*Txn) error) {
	t.Helper()
	if err := s.Update(fn); err != nil {
		t.Fatal(err)
	}
}

// TestSlotKeys: slots map to the stored keys (the format) and back, and a
// box's keys sort in sequence order.
func TestSlotKeys(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		slot Slot
		key  string
	}{
		{InboxSlot("s1", 7), "inbox/s1/00000000000000000007"},
		{OutboxSlot("h.lan", 12), "outbox/h.lan/00000000000000000012"},
	} {
		if k := c.slot.key(); k != c.key {
			t.Errorf("%+v key %q, want %q", c.slot, k, c.key)
		}
		if back, ok := parseSlot(c.key); !ok || back != c.slot {
			t.Errorf("parseSlot(%q) = %+v, %v", c.key, back, ok)
		}
	}
	for _, bad := range []string{"inbox//1", "inbox/x", "sess/x", "inbox/s/x", "outbox/h"} {
		if s, ok := parseSlot(bad); ok {
			t.Errorf("parseSlot(%q) = %+v, accepted", bad, s)
		}
	}
	if InboxSlot("s", 9).key() >= InboxSlot("s", 10).key() {
		t.Error("inbox keys do not sort in sequence order")
	}
	if in := InboxSlot("h", 1); in.InOutbox("h") || !in.InInbox("h") || in.InInbox("x") || in.IsZero() {
		t.Error("an inbox slot's owner")
	}
	if out := OutboxSlot("h", 1); out.InInbox("h") || !out.InOutbox("h") {
		t.Error("an outbox slot's owner")
	}
}

// TestMessageIndexRebuiltAtOpen: the index is not stored, yet after a
// reopen it finds every stored inbox and outbox message by id, and none
// that was removed.
func TestMessageIndexRebuiltAtOpen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	in, out, gone := InboxSlot("s1", 7), OutboxSlot("h1", 8), InboxSlot("s1", 9)
	update(t, s, func(txn *Txn) error {
		for id, at := range map[string]Slot{"m-in": in, "m-out": out, "m-gone": gone} {
			if err := txn.PutMessage(at, &wire.Message{ID: id, Text: "hi"}); err != nil {
				return err
			}
		}
		return nil
	})
	update(t, s, func(txn *Txn) error { return txn.DeleteMessage("m-gone", gone) })
	s = reopen(t, s, dir, nil)
	defer s.Close()
	_ = s.View(func(txn *Txn) error {
		for id, want := range map[string]Slot{"m-in": in, "m-out": out} {
			if at, ok := txn.MessageSlot(id); !ok || at != want {
				t.Errorf("MessageSlot(%s) = %+v, %v after reopen; want %+v", id, at, ok, want)
			}
			if m, err := txn.MessageAt(want); err != nil || m.ID != id || m.Text != "hi" {
				t.Errorf("MessageAt(%+v) = %+v, %v", want, m, err)
			}
		}
		if at, ok := txn.MessageSlot("m-gone"); ok {
			t.Errorf("removed message still indexed at %+v", at)
		}
		if _, err := txn.MessageAt(gone); !errors.Is(err, ErrNotFound) {
			t.Errorf("removed message read: %v", err)
		}
		return nil
	})
	if n := s.index.len(); n != 2 {
		t.Errorf("index holds %d ids, want 2", n)
	}
}

// TestMessageIndexChangesOnlyOnCommit: a transaction sees its own staged
// changes; others see them once it has committed, and never those of one
// that failed.
func TestMessageIndexChangesOnlyOnCommit(t *testing.T) {
	t.Parallel()
	s, _ := openTemp(t)
	seen := func(id string) bool {
		var ok bool
		_ = s.View(func(txn *Txn) error { _, ok = txn.MessageSlot(id); return nil })
		return ok
	}
	update(t, s, func(txn *Txn) error {
		if err := txn.PutMessage(InboxSlot("s", 1), &wire.Message{ID: "m1"}); err != nil {
			return err
		}
		if at, ok := txn.MessageSlot("m1"); !ok || at != InboxSlot("s", 1) {
			t.Errorf("own staged change not seen: %+v, %v", at, ok)
		}
		if seen("m1") {
			t.Error("another transaction saw a change before its commit")
		}
		return nil
	})
	if !seen("m1") {
		t.Error("committed change not seen")
	}
	boom := errors.New("boom")
	if err := s.Update(func(txn *Txn) error {
		if err := txn.DeleteMessage("m1", InboxSlot("s", 1)); err != nil {
			return err
		}
		if err := txn.PutMessage(InboxSlot("s", 2), &wire.Message{ID: "m2"}); err != nil {
			return err
		}
		if _, ok := txn.MessageSlot("m1"); ok {
			t.Error("own staged removal not seen")
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("Update = %v, want boom", err)
	}
	if !seen("m1") || seen("m2") {
		t.Errorf("a failed transaction changed the index: m1 %v, m2 %v", seen("m1"), seen("m2"))
	}
}

// TestDeleteMessageAt reports whether there was a message, and unindexes
// it by the id it holds.
func TestDeleteMessageAt(t *testing.T) {
	t.Parallel()
	s, _ := openTemp(t)
	at := InboxSlot("s", 1)
	update(t, s, func(txn *Txn) error {
		if gone, err := txn.DeleteMessageAt(at); gone || err != nil {
			t.Errorf("delete of nothing: %v, %v", gone, err)
		}
		if err := txn.PutMessage(at, &wire.Message{ID: "m1"}); err != nil {
			return err
		}
		if gone, err := txn.DeleteMessageAt(at); !gone || err != nil {
			t.Errorf("delete of a message: %v, %v", gone, err)
		}
		if _, ok := txn.MessageSlot("m1"); ok {
			t.Error("deleted message still indexed")
		}
		if has, err := txn.HasMessageAt(at); has || err != nil {
			t.Errorf("deleted message still there: %v, %v", has, err)
		}
		return nil
	})
}

// TestBoxScans: an inbox reads in sequence order, up to a limit, skipping
// what is unreadable; an outbox and another inbox are apart.
func TestBoxScans(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	update(t, s, func(txn *Txn) error {
		for _, seq := range []uint64{10, 2, 7} {
			if err := txn.PutMessage(InboxSlot("s", seq), &wire.Message{ID: fmt.Sprint("m", seq), Seq: seq}); err != nil {
				return err
			}
		}
		if err := txn.PutMessage(InboxSlot("s2", 1), &wire.Message{ID: "other"}); err != nil {
			return err
		}
		if err := txn.PutMessage(OutboxSlot("s", 3), &wire.Message{ID: "out"}); err != nil {
			return err
		}
		return txn.Set(inboxKey("s", 5), []byte("not json")) // a format 2 key: migrated
	})
	s = reopen(t, s, dir, func() {
		if _, err := RewriteFormatMarker(dir, "2"); err != nil {
			t.Fatal(err)
		}
	})
	defer s.Close()
	_ = s.View(func(txn *Txn) error {
		for _, c := range []struct {
			limit int
			want  []string
		}{{0, []string{"m2", "m7", "m10"}}, {2, []string{"m2", "m7"}}} {
			var ids []string
			if err := txn.ScanInbox("s", func(at Slot, m wire.Message) bool {
				if at != InboxSlot("s", m.Seq) {
					t.Errorf("message %s in slot %+v", m.ID, at)
				}
				ids = append(ids, m.ID)
				return c.limit == 0 || len(ids) < c.limit
			}); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(ids) != fmt.Sprint(c.want) {
				t.Errorf("ScanInbox limit %d = %v, want %v", c.limit, ids, c.want)
			}
		}
		if got := txn.InboxSlots("s", 3); fmt.Sprint(got) != fmt.Sprint([]Slot{InboxSlot("s", 2), InboxSlot("s", 5), InboxSlot("s", 7)}) {
			t.Errorf("InboxSlots = %v", got)
		}
		var out []string
		_ = txn.ScanOutbox("s", func(_ Slot, m wire.Message) bool { out = append(out, m.ID); return true })
		if fmt.Sprint(out) != "[out]" || fmt.Sprint(txn.OutboxSlots("s")) != fmt.Sprint([]Slot{OutboxSlot("s", 3)}) {
			t.Errorf("outbox of s = %v, %v", out, txn.OutboxSlots("s"))
		}
		if !txn.HasInbox("s2") || txn.HasInbox("s3") {
			t.Error("HasInbox")
		}
		return nil
	})
}

// TestFormat1IndexKeysDropped: a format 1 store's midx/ keys are dropped
// at Open, its messages are found through the rebuilt index, and it is
// marked with the current format.
func TestFormat1IndexKeysDropped(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	at := InboxSlot("s1", 3)
	update(t, s, func(txn *Txn) error {
		if err := txn.Set(at.key(), storedMessage("m3")); err != nil {
			return err
		}
		return txn.Set(legacyIndexPrefix+"m3", []byte(at.key()))
	})
	s = reopen(t, s, dir, func() {
		if _, err := RewriteFormatMarker(dir, "1"); err != nil {
			t.Fatal(err)
		}
	})
	defer s.Close()
	_ = s.View(func(txn *Txn) error {
		if _, err := txn.Get(legacyIndexPrefix + "m3"); !errors.Is(err, ErrNotFound) {
			t.Errorf("format 1 index key still there: %v", err)
		}
		if got, ok := txn.MessageSlot("m3"); !ok || got != at {
			t.Errorf("MessageSlot(m3) = %+v, %v; want %+v", got, ok, at)
		}
		if v, err := txn.Get(formatKey); err != nil || string(v) != fmt.Sprint(FormatVersion) {
			t.Errorf("format marker %q, %v; want %d", v, err, FormatVersion)
		}
		return nil
	})
}

// TestOpenVisitingHandsEachStoredMessageOnce: the scan that rebuilds the
// index hands every inbox and outbox message, decoded, and nothing else,
// to visit.
func TestOpenVisitingHandsEachStoredMessageOnce(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	want := map[Slot]string{InboxSlot("s1", 1): "m1", InboxSlot("s2", 2): "m2", OutboxSlot("h1", 3): "m3"}
	update(t, s, func(txn *Txn) error {
		for at, id := range want {
			if err := txn.Set(at.key(), storedMessage(id)); err != nil {
				return err
			}
		}
		return txn.Set(sessionKey("s1"), []byte(`{"id":"s1"}`))
	})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := RewriteFormatMarker(dir, "2"); err != nil { // format 2 keys: migrated first
		t.Fatal(err)
	}
	seen := map[Slot]int{}
	s, err = OpenVisiting(dir, slog.New(slog.DiscardHandler), func(at Slot, m *wire.Message) {
		seen[at]++
		if m.ID != want[at] || m.Text != "hi" {
			t.Errorf("visit %+v: message %+v", at, m)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if len(seen) != len(want) {
		t.Errorf("visited %v, want the %d stored messages", seen, len(want))
	}
	for at := range want {
		if seen[at] != 1 {
			t.Errorf("%+v visited %d times, want once", at, seen[at])
		}
	}
}

func TestBoxKeyDigits(t *testing.T) {
	t.Parallel()
	for _, seq := range []uint64{0, 1, 99, 1 << 40, ^uint64(0)} {
		if got, want := inboxKey("s", seq), fmt.Sprintf("inbox/s/%020d", seq); got != want {
			t.Errorf("inboxKey(s, %d) = %q, want %q", seq, got, want)
		}
	}
}
