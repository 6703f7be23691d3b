package store

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// rawKeys returns the keys under prefix.
func rawKeys(t *testing.T, s *Store, prefix string) []string {
	t.Helper()
	var out []string
	_ = s.View(func(txn *Txn) error {
		txn.Keys(prefix, func(k string) bool { out = append(out, k); return true })
		return nil
	})
	return out
}

// noLogKeys fails unless the store holds no log entry and no ack record.
func noLogKeys(t *testing.T, s *Store, when string) {
	t.Helper()
	if got := append(rawKeys(t, s, logPrefix), rawKeys(t, s, logAckPrefix)...); len(got) != 0 {
		t.Fatalf("log keys left %s: %v", when, got)
	}
}

// inboxIDs returns the ids ScanInbox reads for sid, in order.
func inboxIDs(t *testing.T, s *Store, sid string) string {
	t.Helper()
	var ids []string
	if err := s.View(func(txn *Txn) error {
		return txn.ScanInbox(sid, func(at Slot, m wire.Message) bool {
			if at != InboxSlot(sid, m.Seq) {
				t.Errorf("message %s read in slot %+v", m.ID, at)
			}
			ids = append(ids, m.ID)
			return true
		})
	}); err != nil {
		t.Fatal(err)
	}
	return strings.Join(ids, " ")
}

func putMessages(t *testing.T, s *Store, sid string, seqs ...uint64) {
	t.Helper()
	update(t, s, func(txn *Txn) error {
		for _, seq := range seqs {
			if err := txn.PutMessage(InboxSlot(sid, seq), &wire.Message{ID: fmt.Sprint("m", seq), Seq: seq, To: sid}); err != nil {
				return err
			}
		}
		return nil
	})
}

func deleteMessages(t *testing.T, s *Store, seqs ...uint64) {
	t.Helper()
	update(t, s, func(txn *Txn) error {
		for _, seq := range seqs {
			id := fmt.Sprint("m", seq)
			at, ok := txn.MessageSlot(id)
			if !ok {
				return fmt.Errorf("%s not stored", id)
			}
			if err := txn.DeleteMessage(id, at); err != nil {
				return err
			}
		}
		return nil
	})
}

// TestMessageLogOneEntryPerCommit: the messages of one commit are one log
// entry (no key per message); removals are ack records; once all are
// removed nothing of the entry is left.
func TestMessageLogOneEntryPerCommit(t *testing.T) {
	t.Parallel()
	s, _ := openTemp(t)
	putMessages(t, s, "s", 1, 2, 3, 4)
	if got := rawKeys(t, s, logPrefix); len(got) != 1 {
		t.Fatalf("log entries after one commit of 4 messages: %v, want 1", got)
	}
	if got := rawKeys(t, s, inboxesPrefix); len(got) != 0 {
		t.Fatalf("inbox keys written: %v", got)
	}
	deleteMessages(t, s, 2)
	deleteMessages(t, s, 1, 3)
	if got := rawKeys(t, s, logAckPrefix); len(got) != 2 {
		t.Fatalf("ack records after two removing commits: %v, want 2", got)
	}
	if got := inboxIDs(t, s, "s"); got != "m4" {
		t.Fatalf("inbox after removals: %q, want m4", got)
	}
	deleteMessages(t, s, 4)
	noLogKeys(t, s, "once every message is removed")
}

// TestMessageLogRebuiltAtOpen: after messages stored over several commits
// and some removed, a reopened store reads the same inbox in order, finds
// each by id, and goes on numbering entries after the existing ones.
func TestMessageLogRebuiltAtOpen(t *testing.T) {
	t.Parallel()
	s, dir := openTemp(t)
	putMessages(t, s, "s", 1, 2, 3)
	putMessages(t, s, "s", 5, 4)
	putMessages(t, s, "t", 6)
	deleteMessages(t, s, 2, 5)
	want := "m1 m3 m4"
	if got := inboxIDs(t, s, "s"); got != want {
		t.Fatalf("inbox before reopen %q, want %q", got, want)
	}
	s = reopen(t, s, dir, nil)
	defer s.Close()
	if got := inboxIDs(t, s, "s"); got != want {
		t.Fatalf("inbox after reopen %q, want %q", got, want)
	}
	_ = s.View(func(txn *Txn) error {
		if at, ok := txn.MessageSlot("m6"); !ok || at != InboxSlot("t", 6) {
			t.Errorf("MessageSlot(m6) = %+v, %v", at, ok)
		}
		if _, ok := txn.MessageSlot("m5"); ok {
			t.Error("removed m5 still indexed")
		}
		return nil
	})
	putMessages(t, s, "s", 7)
	deleteMessages(t, s, 1, 3, 4, 6, 7)
	noLogKeys(t, s, "once every message is removed")
}

// TestMessageLogSameTransaction: a message put and removed in one
// transaction writes nothing; one put reads back before the commit, in
// order with the committed ones.
func TestMessageLogSameTransaction(t *testing.T) {
	t.Parallel()
	s, _ := openTemp(t)
	putMessages(t, s, "s", 1, 3)
	update(t, s, func(txn *Txn) error {
		for _, seq := range []uint64{2, 4} {
			if err := txn.PutMessage(InboxSlot("s", seq), &wire.Message{ID: fmt.Sprint("m", seq), Seq: seq}); err != nil {
				return err
			}
		}
		var ids []string
		if err := txn.ScanInbox("s", func(_ Slot, m wire.Message) bool { ids = append(ids, m.ID); return true }); err != nil {
			return err
		}
		if got := strings.Join(ids, " "); got != "m1 m2 m3 m4" {
			t.Errorf("scan inside the transaction: %q", got)
		}
		if gone, err := txn.DeleteMessageAt(InboxSlot("s", 4)); err != nil || !gone {
			t.Errorf("DeleteMessageAt of a message put by the transaction: %v, %v", gone, err)
		}
		if _, ok := txn.MessageSlot("m4"); ok {
			t.Error("m4 still indexed inside the transaction")
		}
		return nil
	})
	if got := inboxIDs(t, s, "s"); got != "m1 m2 m3" {
		t.Fatalf("inbox %q, want m1 m2 m3", got)
	}
	if got := rawKeys(t, s, logAckPrefix); len(got) != 0 {
		t.Errorf("ack records for a message never committed: %v", got)
	}
}

// TestMessageLogConcurrentRemovals: two transactions removing messages of
// one entry at once do not conflict; what is left over (an entry with
// every record removed) is cleaned at the next Open.
func TestMessageLogConcurrentRemovals(t *testing.T) {
	t.Parallel()
	s, dir := openTemp(t)
	var seqs []uint64
	for i := uint64(1); i <= 40; i++ {
		seqs = append(seqs, i)
	}
	putMessages(t, s, "s", seqs...)
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for half := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.Update(func(txn *Txn) error {
				for _, seq := range seqs[half*20 : half*20+20] {
					if _, err := txn.DeleteMessageAt(InboxSlot("s", seq)); err != nil {
						return err
					}
				}
				return nil
			})
		}()
	}
	wg.Wait()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent removal: %v", err)
		}
	}
	if got := inboxIDs(t, s, "s"); got != "" {
		t.Fatalf("inbox after removing all: %q", got)
	}
	s = reopen(t, s, dir, nil)
	defer s.Close()
	noLogKeys(t, s, "after reopen")
}

// TestMessageLogLargeCommitSplits: a commit holding more than one entry's
// worth of bytes writes several entries, each read back in order.
func TestMessageLogLargeCommitSplits(t *testing.T) {
	t.Parallel()
	s, dir := openTemp(t)
	text := strings.Repeat("x", 64<<10)
	var want []string
	update(t, s, func(txn *Txn) error {
		for seq := uint64(1); seq <= 20; seq++ {
			want = append(want, fmt.Sprint("m", seq))
			if err := txn.PutMessage(InboxSlot("s", seq), &wire.Message{ID: fmt.Sprint("m", seq), Seq: seq, Text: text}); err != nil {
				return err
			}
		}
		return nil
	})
	if got := rawKeys(t, s, logPrefix); len(got) < 2 {
		t.Fatalf("log entries for 1.3 MB in one commit: %d, want several", len(got))
	}
	s = reopen(t, s, dir, nil)
	defer s.Close()
	if got := inboxIDs(t, s, "s"); got != strings.Join(want, " ") {
		t.Fatalf("inbox after reopen %q", got)
	}
}

// TestMessageBytesAtReadsTheLog: the stored encoding of a message (what
// the history keeps) reads from its log entry, committed or not yet.
func TestMessageBytesAtReadsTheLog(t *testing.T) {
	t.Parallel()
	s, _ := openTemp(t)
	putMessages(t, s, "s", 1, 2)
	update(t, s, func(txn *Txn) error {
		if err := txn.PutMessage(InboxSlot("s", 3), &wire.Message{ID: "m3", Seq: 3}); err != nil {
			return err
		}
		for _, seq := range []uint64{2, 3} {
			v, err := txn.MessageBytesAt(InboxSlot("s", seq))
			if err != nil || !strings.Contains(string(v), fmt.Sprintf(`"id":"m%d"`, seq)) {
				t.Errorf("MessageBytesAt(%d) = %s, %v", seq, v, err)
			}
		}
		if _, err := txn.MessageBytesAt(InboxSlot("s", 9)); err != ErrNotFound {
			t.Errorf("MessageBytesAt of an empty slot: %v, want ErrNotFound", err)
		}
		return nil
	})
}

// TestEntryValueRecords: each record of an entry reads back by index; a
// truncated entry gives its whole records and refuses the rest.
func TestEntryValueRecords(t *testing.T) {
	t.Parallel()
	var v []byte
	for i := range 3 {
		v = appendRecord(v, InboxSlot("s", uint64(i)), []byte(fmt.Sprintf(`{"id":"m%d"}`, i)))
	}
	e := newEntryValue(v)
	for i := range 3 {
		if got, ok := e.record(i); !ok || string(got) != fmt.Sprintf(`{"id":"m%d"}`, i) {
			t.Errorf("record %d = %q, %v", i, got, ok)
		}
	}
	if _, ok := e.record(3); ok {
		t.Error("record 3 of 3 read")
	}
	cut := newEntryValue(v[:len(v)-2])
	if got, ok := cut.record(1); !ok || string(got) != `{"id":"m1"}` {
		t.Errorf("record 1 of a truncated entry = %q, %v", got, ok)
	}
	if got, ok := cut.record(2); ok {
		t.Errorf("truncated record 2 read: %q", got)
	}
}

// TestMessageBytesAtAfterReopen: with nothing cached (a new Open), a
// message reads from its entry in Badger.
func TestMessageBytesAtAfterReopen(t *testing.T) {
	t.Parallel()
	s, dir := openTemp(t)
	putMessages(t, s, "s", 1, 2, 3)
	s = reopen(t, s, dir, nil)
	defer s.Close()
	_ = s.View(func(txn *Txn) error {
		for _, seq := range []uint64{3, 1} {
			v, err := txn.MessageBytesAt(InboxSlot("s", seq))
			if err != nil || !strings.Contains(string(v), fmt.Sprintf(`"id":"m%d"`, seq)) {
				t.Errorf("MessageBytesAt(%d) after reopen = %s, %v", seq, v, err)
			}
		}
		return nil
	})
}
