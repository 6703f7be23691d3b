package store

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/intercom-dev/intercom/pkg/wire"
)

func openDir(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	return s
}

// outboxIDs returns the ids ScanOutbox reads for host, in order.
func outboxIDs(t *testing.T, s *Store, host string) string {
	t.Helper()
	var ids []string
	if err := s.View(func(txn *Txn) error {
		return txn.ScanOutbox(host, func(_ Slot, m wire.Message) bool { ids = append(ids, m.ID); return true })
	}); err != nil {
		t.Fatal(err)
	}
	return strings.Join(ids, " ")
}

// TestMigrationFromFormat2MovesBoxesIntoTheLog: a format 2 store's inbox
// and outbox keys (more than one chunk of them) move into new log entries
// numbered after the entries and ack records already there; keys that are
// not slots are dropped; nothing of inbox/ or outbox/ is left, the store is
// marked format 3, and every message reads back in order.
func TestMigrationFromFormat2MovesBoxesIntoTheLog(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "db")
	s := openDir(t, dir)
	putMessages(t, s, "a", 1, 2)
	deleteMessages(t, s, 1) // an ack record next to the entry
	var want []string
	update(t, s, func(txn *Txn) error {
		for seq := uint64(3); seq <= 302; seq++ {
			id := fmt.Sprint("m", seq)
			want = append(want, id)
			if err := txn.Set(inboxKey("a", seq), []byte(fmt.Sprintf(`{"id":%q,"seq":%d,"to":"a"}`, id, seq))); err != nil {
				return err
			}
		}
		for seq := uint64(1); seq <= 3; seq++ {
			if err := txn.Set(outboxKey("far", seq), []byte(fmt.Sprintf(`{"id":"o%d","seq":%d}`, seq, seq))); err != nil {
				return err
			}
		}
		if err := txn.Set(inboxesPrefix+"not-a-slot", []byte("x")); err != nil {
			return err
		}
		return txn.Set(formatKey, []byte("2"))
	})
	before := rawKeys(t, s, logPrefix)
	if len(before) != 1 {
		t.Fatalf("log entries before the migration %v, want one", before)
	}
	s = reopen(t, s, dir, nil)
	defer s.Close()
	if got := marker(t, s); got != strconv.Itoa(FormatVersion) {
		t.Fatalf("format after migration %q, want %d", got, FormatVersion)
	}
	if left := append(rawKeys(t, s, inboxesPrefix), rawKeys(t, s, outboxesPrefix)...); len(left) != 0 {
		t.Fatalf("box keys left after migration: %d, e.g. %s", len(left), left[0])
	}
	entries := rawKeys(t, s, logPrefix)
	if len(entries) < 4 { // the old one, two inbox chunks (256 keys each at most), the outbox
		t.Fatalf("log entries after migration %d (%v), want at least 4", len(entries), entries)
	}
	if entries[0] != before[0] {
		t.Fatalf("the existing entry %s was renumbered or overwritten: %v", before[0], entries)
	}
	if got, want := inboxIDs(t, s, "a"), "m2 "+strings.Join(want, " "); got != want {
		t.Fatalf("inbox after migration:\n%s\nwant\n%s", got, want)
	}
	if got := outboxIDs(t, s, "far"); got != "o1 o2 o3" {
		t.Fatalf("outbox after migration %q, want o1 o2 o3", got)
	}
	// The migrated messages are indexed and removable like any other.
	deleteMessages(t, s, 3, 302)
	s = reopen(t, s, dir, nil)
	if got := inboxIDs(t, s, "a"); strings.Contains(got, "m3 ") || strings.HasSuffix(got, "m302") || !strings.HasPrefix(got, "m2 m4 ") {
		t.Fatalf("inbox after removals and reopen: %s", got)
	}
}

// TestOpenToleratesDamagedLogKeys: at Open, keys under the log's prefixes
// that are not its keys are skipped, an unreadable ack record or message
// is logged and its entry kept, an entry whose framing is broken keeps
// what it could read, ack records of missing entries and entries with all
// records acked are deleted; the readable messages read back.
func TestOpenToleratesDamagedLogKeys(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "db")
	s := openDir(t, dir)
	good := func(id string, seq uint64) []byte {
		return []byte(fmt.Sprintf(`{"id":%q,"seq":%d,"to":"a"}`, id, seq))
	}
	update(t, s, func(txn *Txn) error {
		sets := map[string][]byte{
			logAckPrefix + "junk":              []byte("x"),
			logAckPrefix + "7/x":               []byte("x"),
			logPrefix + "junk":                 []byte("x"),
			logPrefix + "00000000000000000abc": []byte("x"),
			// entry 10: a good message and an unreadable one; its ack record
			// is unreadable (acks nothing).
			logKey(10):        appendRecord(appendRecord(nil, InboxSlot("a", 1), good("g1", 1)), InboxSlot("a", 2), []byte("{not json")),
			logAckKey(10, 11): {0xff},
			// entry 12: one good record, then a record cut short.
			logKey(12): append(appendRecord(nil, InboxSlot("a", 3), good("g3", 3)), 0x05, 'i'),
			// entry 13: its only record acked: deleted at Open.
			logKey(13):        appendRecord(nil, InboxSlot("a", 4), good("g4", 4)),
			logAckKey(13, 14): encodeIndexes([]int32{0}),
			// acks of an entry that is gone.
			logAckKey(20, 21): encodeIndexes([]int32{0, 1}),
			// entry 15: one good record (entry 16, below: a record whose key is no slot).
			logKey(15): appendRecord(nil, InboxSlot("a", 5), good("g5", 5)),
		}
		for k, v := range sets {
			if err := txn.Set(k, v); err != nil {
				return err
			}
		}
		e := appendRecord(nil, InboxSlot("a", 6), good("g6", 6))
		e = append(e, byte(len("bogus")))
		e = append(e, "bogus"...)
		e = append(e, 2, '{', '}')
		return txn.Set(logKey(16), e)
	})
	s = reopen(t, s, dir, nil)
	defer s.Close()
	if got := inboxIDs(t, s, "a"); got != "g1 g3 g5 g6" {
		t.Fatalf("inbox after a damaged log %q, want g1 g3 g5 g6", got)
	}
	for _, k := range []string{logKey(13), logAckKey(13, 14), logAckKey(20, 21)} {
		if err := s.View(func(txn *Txn) error { _, err := txn.Get(k); return err }); err != ErrNotFound {
			t.Errorf("stale %s after Open: %v, want it deleted", k, err)
		}
	}
	var has bool
	_ = s.View(func(txn *Txn) error { has, _ = txn.HasMessageAt(InboxSlot("a", 2)); return nil })
	if !has {
		t.Errorf("the unreadable message's slot is not kept")
	}
	if err := s.View(func(txn *Txn) error { _, err := txn.MessageAt(InboxSlot("a", 2)); return err }); err == nil || !strings.Contains(err.Error(), "decode message") {
		t.Errorf("MessageAt(unreadable) = %v, want a decode error", err)
	}
	// New commits are numbered after every number seen (the highest is 21).
	putMessages(t, s, "b", 1)
	keys := rawKeys(t, s, logPrefix)
	if last := keys[len(keys)-1]; last <= logKey(21) {
		t.Errorf("new entry %s not numbered after the highest seen: %v", last, keys)
	}
	var gone bool
	update(t, s, func(txn *Txn) error {
		var err error
		gone, err = txn.DeleteMessageAt(InboxSlot("a", 2))
		return err
	})
	if !gone {
		t.Errorf("DeleteMessageAt(unreadable) found nothing")
	}
}
