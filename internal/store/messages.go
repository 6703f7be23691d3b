package store

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// Messages: every stored, unacknowledged message waits in a slot, either in
// the inbox of a local session or in the outbox of a bridged host, named
//
//	inbox/<session>/<seq>   outbox/<host>/<seq>
//
// (<seq> zero-padded to 20 digits; a box reads in sequence order), as the
// wire.Message in JSON (wire.AppendMessage, which writes it as
// encoding/json does). Since format 3 a slot is not a key: the messages of
// one commit are one entry of the message log (msglog.go), each recorded
// with its slot's name. Where each message is, by id, is the message index
// (msgindex.go); both are rebuilt at Open from the log.

const (
	inboxesPrefix  = "inbox/"
	outboxesPrefix = "outbox/"
)

// Slot is where a stored message waits: session Owner's inbox, or, with
// Outbox, the outbox of bridged host Owner; Seq orders a box.
type Slot struct {
	Owner  string
	Seq    uint64
	Outbox bool
}

// InboxSlot is the slot of message seq in session sid's inbox.
func InboxSlot(sid string, seq uint64) Slot { return Slot{Owner: sid, Seq: seq} }

// OutboxSlot is the slot of message seq waiting for host.
func OutboxSlot(host string, seq uint64) Slot { return Slot{Owner: host, Seq: seq, Outbox: true} }

// IsZero reports whether s names no slot.
func (s Slot) IsZero() bool { return s == Slot{} }

// InInbox reports whether s is in session sid's inbox.
func (s Slot) InInbox(sid string) bool { return !s.Outbox && s.Owner == sid }

// InOutbox reports whether s is in the outbox of host.
func (s Slot) InOutbox(host string) bool { return s.Outbox && s.Owner == host }

func (s Slot) key() string {
	if s.Outbox {
		return outboxKey(s.Owner, s.Seq)
	}
	return inboxKey(s.Owner, s.Seq)
}

func inboxKey(sid string, seq uint64) string   { return boxKey(inboxesPrefix, sid, seq) }
func outboxKey(host string, seq uint64) string { return boxKey(outboxesPrefix, host, seq) }

// boxKey is prefix owner "/" seq (20 digits, zero-padded). Built on every
// store and ack of a message, so without fmt.
func boxKey(prefix, owner string, seq uint64) string {
	b := make([]byte, len(prefix)+len(owner)+1+20)
	n := copy(b, prefix)
	n += copy(b[n:], owner)
	b[n] = '/'
	for i := len(b) - 1; i > n; i-- {
		b[i] = byte('0' + seq%10)
		seq /= 10
	}
	return string(b)
}

// parseSlot reads an inbox or outbox key.
func parseSlot(key string) (Slot, bool) {
	var s Slot
	rest, in := strings.CutPrefix(key, inboxesPrefix)
	if !in {
		if rest, s.Outbox = strings.CutPrefix(key, outboxesPrefix); !s.Outbox {
			return Slot{}, false
		}
	}
	owner, seq, ok := strings.Cut(rest, "/")
	if !ok || owner == "" {
		return Slot{}, false
	}
	n, err := strconv.ParseUint(seq, 10, 64)
	if err != nil {
		return Slot{}, false
	}
	s.Owner, s.Seq = owner, n
	return s, true
}

// encodeMessage writes m as json.Marshal does (wire.AppendMessage, without
// reflection), sized for its text.
func encodeMessage(m *wire.Message) []byte {
	return wire.AppendMessage(make([]byte, 0, 256+m.Size()), m)
}

// decodeMessage reads what encodeMessage wrote (wire.DecodeMessage: one
// pass without reflection for a message without attachments).
func decodeMessage(v []byte) (wire.Message, error) { return wire.DecodeMessage(v) }

// PutMessage stores m in slot at and indexes it by its id, from this
// transaction's commit on; the commit writes it into its log entry.
func (t *Txn) PutMessage(at Slot, m *wire.Message) error {
	t.putRecord(at, m.ID, encodeMessage(m))
	t.stage(m.ID, indexChange{slot: at})
	return nil
}

// MessageAt returns the message in slot at, or ErrNotFound.
func (t *Txn) MessageAt(at Slot) (wire.Message, error) {
	v, err := t.readRecord(at)
	if err != nil {
		return wire.Message{}, err
	}
	m, err := decodeMessage(v)
	if err != nil {
		return wire.Message{}, fmt.Errorf("decode message in %s: %w (%w)", at.key(), ErrUnreadable, err)
	}
	return m, nil
}

// HasMessageAt reports whether slot at holds a message.
func (t *Txn) HasMessageAt(at Slot) (bool, error) {
	_, _, _, ok := t.stored(at)
	return ok, nil
}

// MessageSlot returns where stored message id is, as this transaction sees
// it (its own changes first, then the index as of the last commit).
func (t *Txn) MessageSlot(id string) (Slot, bool) {
	if c, ok := t.idx[id]; ok {
		return c.slot, !c.removed
	}
	if t.x == nil {
		return Slot{}, false
	}
	return t.x.get(id)
}

// DeleteMessage removes message id from slot at (where MessageSlot found
// it) without reading it.
func (t *Txn) DeleteMessage(id string, at Slot) error {
	t.stage(id, indexChange{removed: true})
	t.removeRecord(at)
	return nil
}

// DeleteMessageAt removes whatever message slot at holds, and its index
// entry; it reports whether there was one.
func (t *Txn) DeleteMessageAt(at Slot) (bool, error) {
	data, l, put, ok := t.stored(at)
	if !ok {
		return false, nil
	}
	id := l.id
	if put {
		var stored struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(data, &stored) == nil {
			id = stored.ID
		}
	}
	if id != "" {
		t.stage(id, indexChange{removed: true})
	}
	return t.removeRecord(at), nil
}

// ScanInbox calls fn with session sid's stored messages in sequence order
// until fn returns false; an unreadable one is logged and skipped.
func (t *Txn) ScanInbox(sid string, fn func(Slot, wire.Message) bool) error {
	return t.scanBox(boxID{owner: sid}, func(at Slot, v []byte) bool {
		m, err := decodeMessage(v)
		if err != nil {
			t.logger().Warn("skip unreadable message", "session", sid, "err", err)
			return true
		}
		return fn(at, m)
	})
}

// ScanOutbox calls fn with the messages waiting for host in sequence order
// until fn returns false; an unreadable one is skipped.
func (t *Txn) ScanOutbox(host string, fn func(Slot, wire.Message) bool) error {
	return t.scanBox(boxID{owner: host, outbox: true}, func(at Slot, v []byte) bool {
		m, err := decodeMessage(v)
		if err != nil {
			return true
		}
		return fn(at, m)
	})
}

// scanBox calls fn with the value of each message of box b in order. The
// values of one log entry are read with one lookup.
func (t *Txn) scanBox(b boxID, fn func(Slot, []byte) bool) error {
	var entry uint64
	var val *entryValue
	return t.eachSlot(b, func(at Slot) (bool, error) {
		data, l, put, ok := t.stored(at)
		if !ok {
			return true, nil
		}
		if !put {
			if val == nil || entry != l.ref.n {
				v, err := t.logEntry(l.ref.n)
				if err == ErrNotFound {
					return true, nil // removed meanwhile, or newer than this snapshot
				}
				if err != nil {
					return false, err
				}
				entry, val = l.ref.n, v
			}
			var found bool
			if data, found = val.record(int(l.ref.i)); !found {
				return true, nil
			}
		}
		return fn(at, data), nil
	})
}

// eachSlot calls fn with each slot of box b this transaction sees, in
// sequence order, until fn returns false or an error.
func (t *Txn) eachSlot(b boxID, fn func(Slot) (bool, error)) error {
	var mine []uint64 // put by this transaction
	if t.ml != nil {
		for at, i := range t.ml.putAt {
			if i >= 0 && boxOf(at) == b {
				mine = append(mine, at.Seq)
			}
		}
		slices.Sort(mine)
	}
	const chunk = 256
	from := uint64(0)
	for {
		var seqs []uint64
		if t.boxes != nil {
			seqs = t.boxes.seqsFrom(b, from, chunk)
		}
		more := len(seqs) == chunk
		if more {
			from = seqs[len(seqs)-1] + 1
		}
		for len(seqs) > 0 || (!more && len(mine) > 0) {
			var seq uint64
			switch {
			case len(mine) > 0 && (len(seqs) == 0 || mine[0] <= seqs[0]):
				seq, mine = mine[0], mine[1:]
				if len(seqs) > 0 && seqs[0] == seq {
					seqs = seqs[1:]
				}
			default:
				seq, seqs = seqs[0], seqs[1:]
			}
			at := Slot{Owner: b.owner, Seq: seq, Outbox: b.outbox}
			if _, _, _, ok := t.stored(at); !ok {
				continue
			}
			if goOn, err := fn(at); err != nil || !goOn {
				return err
			}
		}
		if !more {
			return nil
		}
	}
}

// InboxSlots returns the slots of up to limit (0: all) of session sid's
// messages, in order, without reading them.
func (t *Txn) InboxSlots(sid string, limit int) []Slot { return t.boxSlots(boxID{owner: sid}, limit) }

// OutboxSlots returns the slots of every message waiting for host, without
// reading them.
func (t *Txn) OutboxSlots(host string) []Slot {
	return t.boxSlots(boxID{owner: host, outbox: true}, 0)
}

func (t *Txn) boxSlots(b boxID, limit int) []Slot {
	var out []Slot
	_ = t.eachSlot(b, func(at Slot) (bool, error) {
		out = append(out, at)
		return limit == 0 || len(out) < limit, nil
	})
	return out
}

// HasInbox reports whether session sid has a stored message.
func (t *Txn) HasInbox(sid string) bool {
	found := false
	_ = t.eachSlot(boxID{owner: sid}, func(Slot) (bool, error) { found = true; return false, nil })
	return found
}
