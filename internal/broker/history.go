package broker

import (
	"strconv"
	"sync"
	"time"

	"github.com/intercom-dev/intercom/internal/config"
	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// History (intercom history, search and web): an acknowledged message and
// a published topic record are kept for the retention period of
// config.json (historyMaxAgeMs, historyMaxBytes). Keeping is never on the
// send path: the ack's (or publication's) transaction only copies the
// value into the keeper's queue (stage), and the history writer commits
// the queue later in its own lingering ops, like the trace writer. A
// failure there loses history, never a message. A staged entry whose ack
// then fails is kept anyway: the message is delivered again and kept
// twice, and readers key messages by id.

// historyChunk bounds the bytes of one history write (one transaction,
// one store entry, in the value log from store.ValueLogFrom bytes on).
const historyChunk = 512 << 10

// historyLinger is how long the history writer waits after the first
// staged entry for more (unless historyChunk bytes are staged first, or a
// reader or a purge asks for what is staged): a busy broker's history
// then goes in chunks of tens of kilobytes or more, which Badger keeps in
// its value log (store.ValueLogFrom) instead of copying them through the
// memtable, its flush and every compaction.
const historyLinger = 50 * time.Millisecond

// historyFlushWait bounds how long a reader waits for staged entries.
const historyFlushWait = 5 * time.Second

// historyTrimEvery: a size trim runs once this share of the cap was written.
const historyTrimShare = 16

// historyKeeper holds the retention settings and the entries waiting for
// the history writer. Its zero value is ready; init runs once.
type historyKeeper struct {
	once     sync.Once
	age      time.Duration
	maxBytes int64
	kick     chan struct{}
	flushes  chan chan struct{} // write what is staged now, then close

	mu      sync.Mutex
	last    uint64 // the newest cursor handed out
	queue   []store.HistoryItem
	queued  int   // bytes in queue
	written int64 // bytes kept since the last trim
}

// history returns the broker's keeper, reading the retention settings and
// starting its writer on first use.
func (b *Broker) history() *historyKeeper {
	h := &b.hist
	h.once.Do(func() {
		cfg, _, err := config.Load(b.opts.Layout.ConfigFile())
		if err != nil {
			cfg = config.Defaults()
		}
		h.age, h.maxBytes, h.kick = cfg.HistoryMaxAge(), cfg.HistoryMaxBytes, make(chan struct{}, 1)
		h.flushes = make(chan chan struct{})
		_ = b.st.View(func(txn *store.Txn) error {
			h.last, _ = txn.LastHistoryCursor()
			return nil
		})
		if h.age > 0 {
			h.written = h.maxBytes // trim once at start
			b.tasks.Go(func() { b.historyWriter(h) })
		}
	})
	return h
}

// next hands out a cursor: the time in nanoseconds, strictly increasing.
func (h *historyKeeper) nextLocked() uint64 {
	h.last = max(uint64(time.Now().UnixNano()), h.last+1)
	return h.last
}

// historyCopy returns a copy of the stored message at (about to be deleted
// in txn: acknowledged by its recipient, or settled by the bridge once the
// remote broker stored it) for keepHistory, nil when history is off. The
// copy is staged only once txn is committed: a batch applied again after a
// conflict, or failed, keeps nothing twice or in vain.
func (b *Broker) historyCopy(txn *store.Txn, at store.Slot) []byte {
	if b.history().age <= 0 {
		return nil
	}
	data, err := txn.MessageBytesAt(at)
	if err != nil {
		return nil
	}
	return data
}

// keepHistory queues committed messages' copies (historyCopy) for the
// history writer.
func (b *Broker) keepHistory(copies ...[]byte) {
	h := b.history()
	for _, data := range copies {
		if data != nil {
			h.stage(store.HistoryMessage, data)
		}
	}
}

// stageRecordHistory queues a published topic record.
func (b *Broker) stageRecordHistory(rec store.TopicRecord) {
	if h := b.history(); h.age > 0 {
		if data, err := store.EncodeTopicRecord(rec); err == nil {
			h.stage(store.HistoryRecord, data)
		}
	}
}

func (h *historyKeeper) stage(kind byte, data []byte) {
	h.mu.Lock()
	h.queue = append(h.queue, store.HistoryItem{Cursor: h.nextLocked(), Kind: kind, Data: data})
	h.queued += len(data)
	h.mu.Unlock()
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// flushHistory returns once what was staged before it is written (or the
// writer is gone, or historyFlushWait passed): a history page, a purge and
// a forget see every entry kept before they were asked for.
func (b *Broker) flushHistory() {
	h := b.history()
	h.mu.Lock()
	empty := len(h.queue) == 0
	h.mu.Unlock()
	if empty || h.age <= 0 {
		return
	}
	timeout := time.NewTimer(historyFlushWait)
	defer timeout.Stop()
	done := make(chan struct{})
	select {
	case h.flushes <- done:
	case <-b.tasks.Done():
		return
	case <-timeout.C:
		return
	}
	select {
	case <-done:
	case <-b.tasks.Done():
	case <-timeout.C:
	}
}

// historyWriter commits staged entries until the broker stops (writing
// what is staged then), and trims the history to its size cap. It waits
// historyLinger after a first staged entry, unless asked to flush.
func (b *Broker) historyWriter(h *historyKeeper) {
	var enc store.HistoryEncoder
	var flushed []chan struct{}
	for stopping := false; ; {
		select {
		case <-h.kick:
			stopping, flushed = b.lingerHistory(h, flushed)
		case done := <-h.flushes:
			flushed = append(flushed, done)
		case <-b.tasks.Done():
			stopping = true
		}
		h.mu.Lock()
		queue := h.queue
		h.queue, h.queued = nil, 0
		h.mu.Unlock()
		for len(queue) > 0 {
			n, size := 0, 0
			for n < len(queue) && (n == 0 || size+len(queue[n].Data) <= historyChunk) {
				size += len(queue[n].Data)
				n++
			}
			chunk := queue[:n]
			queue = queue[n:]
			b.writeHistory(h, &enc, chunk)
		}
		for _, done := range flushed {
			close(done)
		}
		flushed = flushed[:0]
		if h.trimDue() {
			b.trimHistory(h)
		}
		if stopping {
			return
		}
	}
}

// lingerHistory waits historyLinger for more staged entries, less when
// historyChunk bytes are staged, a flush is asked for (added to flushed)
// or the broker stops (true).
func (b *Broker) lingerHistory(h *historyKeeper, flushed []chan struct{}) (bool, []chan struct{}) {
	timer := time.NewTimer(historyLinger)
	defer timer.Stop()
	for {
		h.mu.Lock()
		full := h.queued >= historyChunk
		h.mu.Unlock()
		if full {
			return false, flushed
		}
		select {
		case <-timer.C:
			return false, flushed
		case done := <-h.flushes:
			return false, append(flushed, done)
		case <-b.tasks.Done():
			return true, flushed
		case <-h.kick:
		}
	}
}

// writeHistory keeps chunk as one store entry (store/history_chunk.go),
// encoded here rather than in the committer's transaction.
func (b *Broker) writeHistory(h *historyKeeper, encoder *store.HistoryEncoder, chunk []store.HistoryItem) {
	done := make(chan struct{})
	enc := encoder.Chunk(chunk)
	b.cmt.Submit(store.Op{
		Apply: func(txn *store.Txn) error { return txn.PutHistory(enc, h.age) },
		After: func(err error) {
			if err != nil {
				b.log.Debug("history not kept", "entries", len(chunk), "err", err)
			}
			close(done)
		},
		Size:   enc.Size(),
		Linger: true,
	})
	<-done
	h.mu.Lock()
	h.written += int64(enc.Size())
	h.mu.Unlock()
}

func (h *historyKeeper) trimDue() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.maxBytes > 0 && h.written >= h.maxBytes/historyTrimShare
}

// trimHistory deletes the oldest chunks while the history is over its
// cap, down to 90% of it.
func (b *Broker) trimHistory(h *historyKeeper) {
	h.mu.Lock()
	h.written = 0
	h.mu.Unlock()
	var cursors []string
	var sizes []int64
	var total int64
	_ = b.st.View(func(txn *store.Txn) error {
		txn.HistorySizes(func(c string, size int64) bool {
			cursors, sizes = append(cursors, c), append(sizes, size)
			total += size
			return true
		})
		return nil
	})
	if total <= h.maxBytes {
		return
	}
	var drop []string
	for i := 0; i < len(cursors) && total > h.maxBytes*9/10; i++ {
		drop = append(drop, cursors[i])
		total -= sizes[i]
	}
	if err := b.deleteHistory(drop); err != nil {
		b.log.Warn("trim history", "err", err)
		return
	}
	b.log.Info("history trimmed to its size cap", "removed", len(drop), "max_bytes", h.maxBytes)
}

// deleteHistory removes chunks by their keys, a share per transaction.
func (b *Broker) deleteHistory(cursors []string) error {
	for len(cursors) > 0 {
		n := min(len(cursors), dropInboxChunk)
		part := cursors[:n]
		cursors = cursors[n:]
		if err := b.cmt.Wait(func(txn *store.Txn) error {
			for _, c := range part {
				if err := txn.DeleteHistory(c); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// historyPage answers wire.SubjHistory.
func (b *Broker) historyPage(req wire.HistoryRequest) (*wire.HistoryReply, error) {
	b.flushHistory()
	if _, err := store.ParseHistoryCursor(req.After); err != nil {
		return nil, wire.Errorf(wire.CodeBadRequest, "%v", err)
	}
	limit := req.Limit
	if limit <= 0 || limit > wire.MaxHistoryPage {
		limit = wire.MaxHistoryPage
	}
	out := &wire.HistoryReply{Entries: []wire.HistoryEntry{}}
	err := b.st.View(func(txn *store.Txn) error {
		var err error
		if out.Epoch, err = txn.HistoryEpoch(); err != nil {
			return err
		}
		if err := txn.HistoryAfter("", func(c string, _ byte, _ []byte) bool { out.First = c; return false }); err != nil {
			return err
		}
		return txn.HistoryAfter(req.After, func(c string, kind byte, data []byte) bool {
			if len(out.Entries) == limit {
				out.More = true
				return false
			}
			if e, ok := historyEntry(c, kind, data); ok {
				out.Entries = append(out.Entries, e)
			}
			return true
		})
	})
	if err != nil {
		return nil, classify(err)
	}
	return out, nil
}

// historyEntry is a kept value as history readers get it.
func historyEntry(cursor string, kind byte, data []byte) (wire.HistoryEntry, bool) {
	n, _ := store.ParseHistoryCursor(cursor)
	e := wire.HistoryEntry{Cursor: cursor, At: time.Unix(0, int64(n)).UTC()}
	m, r, ok := store.DecodeHistory(kind, data)
	switch {
	case !ok:
		return e, false
	case m != nil:
		e.Kind, e.Message = wire.HistoryMessage, m
	default:
		r.Declared = r.Ownership
		e.Kind, e.Record = wire.HistoryRecord, r
	}
	return e, true
}

// historyPurge answers wire.SubjHistoryPurge.
func (b *Broker) historyPurge(req wire.HistoryPurgeRequest) (*wire.HistoryPurgeReply, error) {
	n, err := b.purgeHistory(req.SessionID, req.Before)
	if err != nil {
		return nil, classify(err)
	}
	return &wire.HistoryPurgeReply{Removed: n}, nil
}

// forgetHistory removes what the history keeps of a forgotten session.
func (b *Broker) forgetHistory(sid string) error {
	_, err := b.purgeHistory(sid, time.Time{})
	return err
}

// purgeHistory removes the entries involving sid ("" for every session)
// kept before before (zero for all), rewriting the chunks that hold any,
// and moves the epoch on so that every index of the history is rebuilt.
func (b *Broker) purgeHistory(sid string, before time.Time) (int, error) {
	b.flushHistory()
	drop := func(c string, kind byte, data []byte) bool {
		e, ok := historyEntry(c, kind, data)
		if !before.IsZero() && !e.At.Before(before) {
			return false
		}
		return !ok || sid == "" || involves(e, sid)
	}
	var parts [][]string // chunks to rewrite, up to historyChunk bytes a transaction
	size := historyChunk
	err := b.st.View(func(txn *store.Txn) error {
		return txn.HistoryChunkKeys(drop, func(key string, n int) bool {
			if size+n > historyChunk {
				parts, size = append(parts, nil), 0
			}
			parts[len(parts)-1] = append(parts[len(parts)-1], key)
			size += n
			return true
		})
	})
	if err != nil {
		return 0, err
	}
	removed := 0
	for _, part := range parts {
		n := 0
		if err := b.cmt.Wait(func(txn *store.Txn) error {
			n = 0 // applied again after a conflict
			for _, key := range part {
				k, err := txn.FilterHistory(key, drop)
				if err != nil {
					return err
				}
				n += k
			}
			return nil
		}); err != nil {
			return removed, err
		}
		removed += n
	}
	if removed > 0 {
		epoch := strconv.FormatInt(time.Now().UnixNano(), 10)
		if err := b.cmt.Wait(func(txn *store.Txn) error { return txn.SetHistoryEpoch(epoch) }); err != nil {
			return removed, err
		}
		b.log.Info("history purged", "removed", removed, "session", sid)
	}
	return removed, nil
}

// involves reports whether session sid sent or received entry e.
func involves(e wire.HistoryEntry, sid string) bool {
	if e.Message != nil {
		return e.Message.From.ID == sid || e.Message.To == sid
	}
	return e.Record != nil && e.Record.From.ID == sid
}
