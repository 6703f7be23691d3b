package store

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// putSingleHistory writes an entry as a store before chunks held it: its
// own key, its kind byte, then its data.
func putSingleHistory(txn *Txn, n uint64, kind byte, data []byte) error {
	return txn.SetTTL(historyPrefix+HistoryCursor(n), append([]byte{kind}, data...), time.Hour)
}

// historyChunkAt is one chunk of entries at cursors (odd ones messages,
// even ones records), each with data "<kind><cursor>".
func historyChunkAt(cursors ...uint64) []HistoryItem {
	items := make([]HistoryItem, len(cursors))
	for i, c := range cursors {
		kind := HistoryMessage
		if c%2 == 0 {
			kind = HistoryRecord
		}
		items[i] = HistoryItem{Cursor: c, Kind: kind, Data: []byte(fmt.Sprintf("%c%d", kind, c))}
	}
	return items
}

// readHistory returns "<cursor>:<kind><data>" for each entry after after,
// up to limit.
func readHistory(t *testing.T, s *Store, after string, limit int) []string {
	t.Helper()
	var out []string
	if err := s.View(func(txn *Txn) error {
		return txn.HistoryAfter(after, func(c string, kind byte, data []byte) bool {
			n, err := ParseHistoryCursor(c)
			if err != nil {
				t.Errorf("cursor %q: %v", c, err)
			}
			out = append(out, fmt.Sprintf("%d:%c%s", n, kind, data))
			return len(out) < limit
		})
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func historyKeys(t *testing.T, s *Store) []string {
	t.Helper()
	var keys []string
	_ = s.View(func(txn *Txn) error {
		txn.HistorySizes(func(c string, size int64) bool {
			if size <= 0 {
				t.Errorf("chunk %s size %d", c, size)
			}
			keys = append(keys, c)
			return true
		})
		return nil
	})
	return keys
}

func lastHistory(t *testing.T, s *Store) uint64 {
	t.Helper()
	var n uint64
	if err := s.View(func(txn *Txn) error { var err error; n, err = txn.LastHistoryCursor(); return err }); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestHistoryChunksRoundTrip: chunks and single entries of a store before
// chunks, mixed, read back as one history: from every position (before the
// first entry, at and inside a chunk, at a chunk's last, between chunks,
// at a single entry, after all), oldest first, stopping when told; each
// chunk is one key, under its last entry's cursor; a reopened store reads
// the same.
func TestHistoryChunksRoundTrip(t *testing.T) {
	t.Parallel()
	s, dir := openTemp(t)
	update(t, s, func(txn *Txn) error {
		if err := txn.PutHistory(NewHistoryChunk(historyChunkAt(10, 11, 12)), time.Hour); err != nil {
			return err
		}
		if err := putSingleHistory(txn, 20, HistoryRecord, []byte("r20")); err != nil {
			return err
		}
		if err := txn.PutHistory(NewHistoryChunk(historyChunkAt(30, 35)), time.Hour); err != nil {
			return err
		}
		return putSingleHistory(txn, 40, HistoryRecord, []byte("r40"))
	})
	all := []uint64{10, 11, 12, 20, 30, 35, 40}
	want := func(after uint64) []string {
		var out []string
		for _, c := range all {
			if c > after {
				kind := 'm'
				if c%2 == 0 {
					kind = 'r'
				}
				out = append(out, fmt.Sprintf("%d:%c%c%d", c, kind, kind, c))
			}
		}
		return out
	}
	check := func(s *Store) {
		t.Helper()
		if got := readHistory(t, s, "", 100); !slices.Equal(got, want(0)) {
			t.Fatalf("all history %v, want %v", got, want(0))
		}
		for _, after := range []uint64{1, 10, 11, 12, 15, 20, 29, 30, 35, 40, 99} {
			if got := readHistory(t, s, HistoryCursor(after), 100); !slices.Equal(got, want(after)) {
				t.Errorf("history after %d: %v, want %v", after, got, want(after))
			}
		}
		for limit := 1; limit <= len(all); limit++ {
			if got := readHistory(t, s, HistoryCursor(10), limit); !slices.Equal(got, want(10)[:min(limit, len(all)-1)]) {
				t.Errorf("history after 10 stopped at %d: %v", limit, got)
			}
		}
		if got, wantKeys := historyKeys(t, s), []string{HistoryCursor(12), HistoryCursor(20), HistoryCursor(35), HistoryCursor(40)}; !slices.Equal(got, wantKeys) {
			t.Fatalf("chunk keys %v, want %v", got, wantKeys)
		}
		if n := lastHistory(t, s); n != 40 {
			t.Fatalf("last cursor %d, want 40", n)
		}
	}
	check(s)
	s = reopen(t, s, dir, nil)
	t.Cleanup(func() { _ = s.Close() })
	check(s)
	if err := s.View(func(txn *Txn) error {
		return txn.HistoryAfter("x1", func(string, byte, []byte) bool { return true })
	}); err == nil {
		t.Fatal("history after a cursor that is no number: no error")
	}
}

// TestFilterHistoryRewritesChunks: a purge's rewrite removes the matching
// entries of the chunks that hold any, keeps the others under the new last
// cursor with the chunk's expiry, deletes a chunk (or a single old entry)
// left empty, and leaves a chunk without matches alone.
func TestFilterHistoryRewritesChunks(t *testing.T) {
	t.Parallel()
	s, _ := openTemp(t)
	update(t, s, func(txn *Txn) error {
		for _, chunk := range [][]uint64{{1, 2, 3}, {4, 6}, {7, 9}} {
			if err := txn.PutHistory(NewHistoryChunk(historyChunkAt(chunk...)), time.Hour); err != nil {
				return err
			}
		}
		if err := putSingleHistory(txn, 11, HistoryMessage, []byte("m11")); err != nil {
			return err
		}
		return putSingleHistory(txn, 12, HistoryRecord, []byte("r12"))
	})
	expiry := func(cursor uint64) uint64 {
		var at uint64
		_ = s.View(func(txn *Txn) error {
			item, err := txn.t.Get(historyKey(cursor))
			if err != nil {
				t.Fatalf("chunk %d: %v", cursor, err)
			}
			at = item.ExpiresAt()
			return nil
		})
		return at
	}
	expires := expiry(3)
	// Drop the messages (odd cursors) and entry 4.
	drop := func(c string, kind byte, _ []byte) bool { return kind == HistoryMessage || c == HistoryCursor(4) }
	var keys []string
	if err := s.View(func(txn *Txn) error {
		return txn.HistoryChunkKeys(drop, func(key string, size int) bool {
			if size <= 0 {
				t.Errorf("chunk %s size %d", key, size)
			}
			keys = append(keys, key)
			return true
		})
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{HistoryCursor(3), HistoryCursor(6), HistoryCursor(9), HistoryCursor(11)}; !slices.Equal(keys, want) {
		t.Fatalf("chunks to rewrite %v, want %v", keys, want)
	}
	removed := 0
	update(t, s, func(txn *Txn) error {
		removed = 0
		for _, key := range append(keys, HistoryCursor(12), HistoryCursor(50)) { // 12: no match, 50: absent
			n, err := txn.FilterHistory(key, drop)
			if err != nil {
				return err
			}
			removed += n
		}
		return nil
	})
	if removed != 6 {
		t.Fatalf("removed %d entries, want 6", removed)
	}
	if got, want := readHistory(t, s, "", 100), []string{"2:rr2", "6:rr6", "12:rr12"}; !slices.Equal(got, want) {
		t.Fatalf("history after the rewrite %v, want %v", got, want)
	}
	if got, want := historyKeys(t, s), []string{HistoryCursor(2), HistoryCursor(6), HistoryCursor(12)}; !slices.Equal(got, want) {
		t.Fatalf("chunk keys after the rewrite %v, want %v", got, want)
	}
	if got := expiry(2); got != expires || got == 0 {
		t.Fatalf("rewritten chunk expires at %d, want the chunk's %d", got, expires)
	}
	if err := s.View(func(txn *Txn) error {
		_, err := txn.FilterHistory("x", drop)
		return err
	}); err == nil {
		t.Fatal("rewrite of a key that is no cursor: no error")
	}
}

// TestUnreadableHistoryChunk: a chunk whose framing is cut short is
// skipped by readers (the others still read), offered to a purge, and
// deleted by its rewrite.
func TestUnreadableHistoryChunk(t *testing.T) {
	t.Parallel()
	good := encodeHistoryChunk(historyChunkAt(5, 6))
	for name, val := range map[string][]byte{
		"no kind":      {historyChunkKind, 0x01},
		"short data":   good[:len(good)-1],
		"bad varint":   {historyChunkKind, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		"bad length":   {historyChunkKind, 0x01, 'm', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		"after a good": append(append([]byte{}, good...), 0x01),
		"bad packing":  {historyPackedKind, 0xff, 0xff, 0x01, 'x'},
	} {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			s, _ := openTemp(t)
			update(t, s, func(txn *Txn) error {
				if err := txn.PutHistory(NewHistoryChunk(historyChunkAt(1)), time.Hour); err != nil {
					return err
				}
				if err := txn.SetTTL(historyPrefix+HistoryCursor(7), val, time.Hour); err != nil {
					return err
				}
				return txn.PutHistory(NewHistoryChunk(historyChunkAt(9)), time.Hour)
			})
			got := readHistory(t, s, "", 100)
			if got[0] != "1:mm1" || got[len(got)-1] != "9:mm9" {
				t.Fatalf("history around an unreadable chunk: %v", got)
			}
			var keys []string
			never := func(string, byte, []byte) bool { return false }
			_ = s.View(func(txn *Txn) error {
				return txn.HistoryChunkKeys(never, func(key string, _ int) bool { keys = append(keys, key); return true })
			})
			if !slices.Equal(keys, []string{HistoryCursor(7)}) {
				t.Fatalf("chunks offered to a purge %v, want the unreadable one", keys)
			}
			update(t, s, func(txn *Txn) error {
				n, err := txn.FilterHistory(HistoryCursor(7), never)
				if n != 1 {
					t.Errorf("rewrite of an unreadable chunk removed %d, want 1", n)
				}
				return err
			})
			if got := historyKeys(t, s); !slices.Equal(got, []string{HistoryCursor(1), HistoryCursor(9)}) {
				t.Fatalf("chunks after the rewrite %v", got)
			}
		})
	}
	if _, err := decodeHistoryChunk(1, []byte{historyChunkKind, 0x01}, func(HistoryItem) bool { return true }); !errors.Is(err, errHistoryChunk) {
		t.Fatalf("decode of a cut chunk: %v, want errHistoryChunk", err)
	}
	s, _ := openTemp(t)
	update(t, s, func(txn *Txn) error {
		if err := txn.SetTTL(historyPrefix+"0000-no-cursor", []byte("m{}"), time.Hour); err != nil {
			return err
		}
		return txn.PutHistory(NewHistoryChunk(historyChunkAt(9)), time.Hour)
	})
	if got := readHistory(t, s, "", 100); !slices.Equal(got, []string{"9:mm9"}) {
		t.Fatalf("history beside a key that is no cursor: %v", got)
	}
}

// TestHistoryChunkPacking: a chunk whose entries share most of their bytes
// is packed (s2) and reads back the same, also after a reopen; a small
// chunk, or one that packing would not shrink, is kept plain.
func TestHistoryChunkPacking(t *testing.T) {
	t.Parallel()
	var alike, random []HistoryItem
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 50 {
		msg := fmt.Sprintf(`{"id":"m%03d","from":{"id":"699d750605586d43fe1cecbffd85cebc","name":"s03","cwd":"/work/project"},"to":"5c0dd4cac366d2c054a2508c676387a1","text":"message %d"}`, i, i)
		alike = append(alike, HistoryItem{Cursor: uint64(100 + i), Kind: HistoryMessage, Data: []byte(msg)})
		noise := make([]byte, 64)
		for j := range noise {
			noise[j] = byte(rng.IntN(256))
		}
		random = append(random, HistoryItem{Cursor: uint64(200 + i), Kind: HistoryRecord, Data: noise})
	}
	plainSize := func(items []HistoryItem) int {
		n := 1
		for _, it := range items {
			n += len(it.Data) + 3
		}
		return n
	}
	if val := encodeHistoryChunk(alike); val[0] != historyPackedKind || len(val) > plainSize(alike)/2 {
		t.Fatalf("alike entries: kind %c, %d bytes of %d plain; want packed to half or less", val[0], len(val), plainSize(alike))
	}
	if val := encodeHistoryChunk(random); val[0] != historyChunkKind {
		t.Fatalf("random entries: kind %c, want plain", val[0])
	}
	if val := encodeHistoryChunk(alike[:2]); val[0] != historyChunkKind {
		t.Fatalf("a small chunk: kind %c, want plain", val[0])
	}
	s, dir := openTemp(t)
	update(t, s, func(txn *Txn) error {
		if err := txn.PutHistory(NewHistoryChunk(alike), time.Hour); err != nil {
			return err
		}
		return txn.PutHistory(NewHistoryChunk(random), time.Hour)
	})
	check := func(s *Store) {
		t.Helper()
		var got []HistoryItem
		if err := s.View(func(txn *Txn) error {
			return txn.HistoryAfter(HistoryCursor(120), func(c string, kind byte, data []byte) bool {
				n, _ := ParseHistoryCursor(c)
				got = append(got, HistoryItem{Cursor: n, Kind: kind, Data: bytes.Clone(data)})
				return true
			})
		}); err != nil {
			t.Fatal(err)
		}
		want := append(slices.Clone(alike[21:]), random...)
		if !slices.EqualFunc(got, want, func(a, b HistoryItem) bool {
			return a.Cursor == b.Cursor && a.Kind == b.Kind && bytes.Equal(a.Data, b.Data)
		}) {
			t.Fatalf("read back %d entries after 120, want %d equal to those kept", len(got), len(want))
		}
	}
	check(s)
	s = reopen(t, s, dir, nil)
	t.Cleanup(func() { _ = s.Close() })
	check(s)
}

// TestLargeHistoryChunkInValueLog: a chunk of ValueLogFrom bytes or more
// (kept in Badger's value log) reads back whole, after a reopen too, and
// a purge's rewrite of it keeps the rest.
func TestLargeHistoryChunkInValueLog(t *testing.T) {
	t.Parallel()
	s, dir := openTemp(t)
	rng := rand.New(rand.NewPCG(3, 4))
	var items []HistoryItem
	for i := range 8 {
		data := make([]byte, ValueLogFrom/4)
		for j := range data {
			data[j] = byte(rng.Uint32()) // incompressible: the chunk stays large
		}
		items = append(items, HistoryItem{Cursor: uint64(i + 1), Kind: HistoryMessage, Data: data})
	}
	chunk := NewHistoryChunk(items)
	if chunk.Size() < ValueLogFrom {
		t.Fatalf("chunk of %d bytes, want at least %d", chunk.Size(), ValueLogFrom)
	}
	update(t, s, func(txn *Txn) error { return txn.PutHistory(chunk, time.Hour) })
	check := func(s *Store, want []HistoryItem) {
		t.Helper()
		var got []HistoryItem
		if err := s.View(func(txn *Txn) error {
			return txn.HistoryAfter("", func(c string, kind byte, data []byte) bool {
				n, _ := ParseHistoryCursor(c)
				got = append(got, HistoryItem{Cursor: n, Kind: kind, Data: bytes.Clone(data)})
				return true
			})
		}); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%d entries read back, want %d", len(got), len(want))
		}
		for i := range want {
			if got[i].Cursor != want[i].Cursor || got[i].Kind != want[i].Kind || !bytes.Equal(got[i].Data, want[i].Data) {
				t.Fatalf("entry %d read back as cursor %d, %d bytes; want cursor %d, %d bytes", i, got[i].Cursor, len(got[i].Data), want[i].Cursor, len(want[i].Data))
			}
		}
	}
	check(s, items)
	s = reopen(t, s, dir, nil)
	t.Cleanup(func() { _ = s.Close() })
	check(s, items)
	update(t, s, func(txn *Txn) error {
		_, err := txn.FilterHistory(HistoryCursor(8), func(c string, _ byte, _ []byte) bool { return c == HistoryCursor(8) })
		return err
	})
	check(s, items[:7])
}
