package store

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestHistoryEntries: kept entries read back oldest first, after a
// cursor or from the start, with their kind; a scan stops when told;
// sizes and the last cursor follow deletions; the epoch is "0" until set.
// Entries 1 and 2 are single entries as a store before chunks holds them,
// entry 10 a chunk of one.
func TestHistoryEntries(t *testing.T) {
	t.Parallel()
	s, _ := openTemp(t)
	update(t, s, func(txn *Txn) error {
		for n, kind := range map[uint64]byte{1: HistoryMessage, 2: HistoryRecord} {
			if err := putSingleHistory(txn, n, kind, []byte(`{"id":"h`+strconv.FormatUint(n, 10)+`"}`)); err != nil {
				return err
			}
		}
		if err := txn.PutHistory(NewHistoryChunk([]HistoryItem{{Cursor: 10, Kind: HistoryMessage, Data: []byte(`{"id":"h10"}`)}}), time.Hour); err != nil {
			return err
		}
		return txn.Set(historyPrefix+HistoryCursor(5), nil) // an empty value: skipped
	})
	read := func(after string, limit int) string { return strings.Join(readHistory(t, s, after, limit), " ") }
	if got, want := read("", 10), `1:m{"id":"h1"} 2:r{"id":"h2"} 10:m{"id":"h10"}`; got != want {
		t.Fatalf("all history %s, want %s", got, want)
	}
	if got, want := read(HistoryCursor(2), 10), `10:m{"id":"h10"}`; got != want {
		t.Fatalf("history after 2: %s, want %s", got, want)
	}
	if got, want := read("", 1), `1:m{"id":"h1"}`; got != want {
		t.Fatalf("history stopped after one: %s, want %s", got, want)
	}
	sizes := func(limit int) (cursors []string) {
		_ = s.View(func(txn *Txn) error {
			txn.HistorySizes(func(c string, size int64) bool {
				if size <= 0 {
					t.Errorf("entry %s size %d", c, size)
				}
				cursors = append(cursors, c)
				return len(cursors) < limit
			})
			return nil
		})
		return cursors
	}
	if got := sizes(10); len(got) != 4 || got[0] != HistoryCursor(1) || got[3] != HistoryCursor(10) {
		t.Fatalf("sizes cover %v, want the four keys in order", got)
	}
	if got := sizes(2); len(got) != 2 {
		t.Fatalf("sizes stopped after two: %v", got)
	}
	last := func() uint64 {
		var n uint64
		if err := s.View(func(txn *Txn) error { var err error; n, err = txn.LastHistoryCursor(); return err }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := last(); n != 10 {
		t.Fatalf("last cursor %d, want 10", n)
	}
	epoch := func() string {
		var e string
		if err := s.View(func(txn *Txn) error { var err error; e, err = txn.HistoryEpoch(); return err }); err != nil {
			t.Fatal(err)
		}
		return e
	}
	if e := epoch(); e != "0" {
		t.Fatalf("epoch before a purge %q, want 0", e)
	}
	update(t, s, func(txn *Txn) error {
		for _, n := range []uint64{1, 2, 5, 10} {
			if err := txn.DeleteHistory(HistoryCursor(n)); err != nil {
				return err
			}
		}
		return txn.SetHistoryEpoch("7")
	})
	if n, e := last(), epoch(); n != 0 || e != "7" {
		t.Fatalf("after a purge: last cursor %d, epoch %q; want 0 and 7", n, e)
	}
	if got := read("", 10); got != "" {
		t.Fatalf("history after a purge: %s", got)
	}
}

// TestHistoryCursorsAndDecoding: cursors are 20 digits and parse back
// ("" is 0, anything else not a number is an error); kept values decode by
// kind, and an unknown kind or unreadable JSON is refused.
func TestHistoryCursorsAndDecoding(t *testing.T) {
	t.Parallel()
	if c := HistoryCursor(42); len(c) != 20 || !strings.HasSuffix(c, "42") {
		t.Fatalf("cursor %q", c)
	}
	if n, err := ParseHistoryCursor(HistoryCursor(42)); n != 42 || err != nil {
		t.Fatalf("parse back: %d, %v", n, err)
	}
	if n, err := ParseHistoryCursor(""); n != 0 || err != nil {
		t.Fatalf(`parse "": %d, %v`, n, err)
	}
	if _, err := ParseHistoryCursor("12x"); !errors.Is(err, strconv.ErrSyntax) || !strings.Contains(err.Error(), `"12x"`) {
		t.Fatalf(`parse "12x": %v, want a syntax error naming it`, err)
	}
	if m, r, ok := DecodeHistory(HistoryMessage, []byte(`{"id":"m1","text":"hi"}`)); !ok || r != nil || m == nil || m.ID != "m1" || m.Text != "hi" {
		t.Fatalf("decode message: %+v %+v %t", m, r, ok)
	}
	if m, r, ok := DecodeHistory(HistoryRecord, []byte(`{"topic":"t","event":"e","message":"x"}`)); !ok || m != nil || r == nil || r.Topic != "t" || r.Message != "x" {
		t.Fatalf("decode record: %+v %+v %t", m, r, ok)
	}
	for _, c := range []struct {
		kind byte
		data string
	}{{HistoryMessage, "{"}, {HistoryRecord, "[1]"}, {'z', "{}"}} {
		if m, r, ok := DecodeHistory(c.kind, []byte(c.data)); ok || m != nil || r != nil {
			t.Errorf("DecodeHistory(%c, %s) = %+v %+v %t, want refused", c.kind, c.data, m, r, ok)
		}
	}
}
