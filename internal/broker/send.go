package broker

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"

	json "github.com/goccy/go-json"
	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Sending: a send is validated and prepared in arrival order (one
// subscription, so one at a time), handed to the committer, pushed to its
// holder early while it is being persisted (pushEarly), and answered once
// it is on disk (send_commit.go).

// Replace-mode coalescing window and caps, as pi-intercom has them.
const (
	replaceWindow     = 1500 * time.Millisecond
	maxReplacePerFrom = 100
	maxReplaceAll     = 1000
)

type replaceKey struct{ from, to, thread string }

// sendState is what sends in flight share: the client message ids being
// committed, and the newest undelivered replace-mode message of each
// (sender, target, thread). Lock order: replace holds its lock while it
// calls delivery (supersede); nothing else is called under it.
type sendState struct {
	mu      sync.Mutex
	dedupe  map[store.ClientID]string   // client message ids accepted, not yet committed
	replace map[replaceKey]replaceEntry // newest undelivered replace message
}

// replaceEntry is a replace-mode message: its id and where it is stored.
type replaceEntry struct {
	id   string
	slot store.Slot
}

func newSendState() *sendState {
	return &sendState{dedupe: map[store.ClientID]string{}, replace: map[replaceKey]replaceEntry{}}
}

// committing reports whether a send with client id dkey is being
// committed.
func (s *sendState) committing(dkey store.ClientID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dedupe[dkey] != ""
}

// begin records that a send with client id dkey (message id) is being
// committed; end, that it is done.
func (s *sendState) begin(dkey store.ClientID, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dedupe[dkey] = id
}

func (s *sendState) end(dkey store.ClientID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.dedupe, dkey)
}

// replaced is what a replace-mode send took over.
type replaced struct {
	prev     replaceEntry // the replace entry this one took over, restored if it fails
	slot     store.Slot   // where the message it supersedes is stored, zero for none
	id       string       // the id of the message it supersedes, "" for none
	refusal  error
	newEntry replaceEntry
}

// takeOver makes entry the newest replace-mode message of rk.
// The one it takes over is superseded (supersede marks it, unless it was
// pushed already); a first message is refused when the caps are reached.
func (s *sendState) takeOver(rk replaceKey, entry replaceEntry, supersede func(id string) bool) replaced {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := replaced{newEntry: entry}
	if prev, ok := s.replace[rk]; ok {
		out.prev = prev
		if supersede(prev.id) {
			out.slot, out.id = prev.slot, prev.id
		}
	} else {
		n, mine := 0, 0
		for k := range s.replace {
			n++
			if k.from == rk.from {
				mine++
			}
		}
		if mine >= maxReplacePerFrom || n >= maxReplaceAll {
			out.refusal = wire.Errorf(wire.CodeFull, "Replace-mode delivery queue is full; retry after pending updates are delivered.")
			return out
		}
	}
	s.replace[rk] = entry
	return out
}

// giveBack undoes takeOver for a message that was not stored: the message
// it superseded is the newest again.
func (s *sendState) giveBack(rk replaceKey, r replaced) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.replace[rk] != r.newEntry {
		return
	}
	if r.prev != (replaceEntry{}) && !r.slot.IsZero() {
		s.replace[rk] = r.prev
	} else {
		delete(s.replace, rk)
	}
}

// delivered drops the replace entries of acknowledged messages.
func (s *sendState) delivered(ids []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range s.replace {
		for _, a := range ids {
			if a == v.id {
				delete(s.replace, k)
			}
		}
	}
}

// forgetTarget drops the replace entries to a forgotten session.
func (s *sendState) forgetTarget(sid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.replace {
		if k.to == sid {
			delete(s.replace, k)
		}
	}
}

// dedupeScope is whose namespace a client message id lives in: the
// sender's; but an ephemeral sender (a CLI call without --session) lives
// for one call, so a retry comes from a new session, and its ids are scoped
// to the recipient instead.
func dedupeScope(from session, to string) string {
	if from.Ephemeral {
		return "~" + to
	}
	return from.ID
}

func newMsgID() string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return "m" + hex.EncodeToString(b[:])
}

// messageID is the id of a new message: derived from the sender's client
// message id when there is one (a retry gets the same id), else random.
func messageID(scope, clientMsgID string) string {
	if clientMsgID == "" {
		return newMsgID()
	}
	sum := sha256.Sum256([]byte(scope + "\x00" + clientMsgID))
	return "m" + hex.EncodeToString(sum[:10])
}

// preparedSend is a validated message ready to be stored.
type preparedSend struct {
	req       wire.SendRequest
	msg       wire.Message
	slot      store.Slot // where it is stored
	toRow     wire.Session
	ask       bool // register a reply obligation
	peerBusy  bool
	rkey      replaceKey     // set for a replace-mode send
	took      replaced       // what it took over (rkey set)
	duplicate string         // id of an earlier message with the same client id
	dkey      store.ClientID // the client id, zero without one
	retry     bool           // an earlier send with the same client id is being committed
	remote    string         // bridged host the message goes to, "" when local
	held      bool           // kept for a person's decision (inbound.go)
	// A remote send announced to the bridge while it is persisted
	// (announceEarly), and the wait for its remote acceptance registered
	// then; or deferred to after its commit.
	announced, deferred bool
	wait                chan remoteOutcome

	replacedGone bool // the superseded message was deleted by this commit
}

// onSend validates a send in arrival order and hands it to the committer.
func (b *Broker) onSend(m *nats.Msg) {
	var req wire.SendRequest
	if err := json.Unmarshal(m.Data, &req); err != nil {
		respond(m, wire.Reply[wire.SendReply]{Error: wire.Errorf(wire.CodeBadRequest, "decode send request: %v", err)})
		return
	}
	p, err := b.prepareSend(req)
	if err != nil {
		respond(m, wire.Reply[wire.SendReply]{Error: toWireError(err)})
		return
	}
	if p.held {
		b.holdSend(m, p)
		return
	}
	apply := func(txn *store.Txn) error { return b.applySend(txn, p) }
	after := func(err error) { b.afterSend(m, p, err) }
	if p.remote != "" {
		apply = func(txn *store.Txn) error {
			if err := b.applySend(txn, p); err != nil {
				return err
			}
			b.announceEarly(p)
			return nil
		}
		after = func(err error) { b.afterRemoteSend(m, p, err) }
	}
	// Read before the committer owns p. A retry's first send was pushed
	// already; while the disk is full or the store failed nothing is pushed
	// that may be refused; an ask is shown only once it is registered
	// (afterSend), so that its recipient's `pending` and `reply` find it.
	early := p.remote == "" && !p.retry && !p.ask && !b.cmt.LowSpace() && b.st.Err() == nil
	msg, dkey, slot := p.msg, p.dkey, p.slot
	b.cmt.Submit(store.Op{
		Apply: apply,
		After: after,
		Size:  len(m.Data),
	})
	if early {
		b.pushEarly(msg, dkey, slot)
	}
}

// pushEarly hands a message to its holder while it is being persisted, so
// delivery does not wait for the disk. Sends are handled one at a time in
// arrival order, so pushes keep that order; the send op is queued first, so
// the holder's ack is committed after it; a retried send keeps its id
// (messageID) and an ack of a not-yet-stored id is remembered
// (Txn.PutAcked), so a crash between push and commit shows nothing twice
// to a holder that acked. Each holder has its own delivery subject
// (wire.Deliver), so a push meant for a dying holder never reaches the next
// one ahead of its backlog. Asks, and replies to a waiting ask, keep the
// post-commit path.
//
// A message with a client id may be a retry of one committed (and perhaps
// acked) before: it is pushed early only if the store knows neither its
// client id, nor its id, nor an ack of it. The check and the push happen
// under delivery.mu, and an ack's reply is sent only after taking
// delivery.mu (onAck), so an ack committed after the check is confirmed to
// its holder after this push.
func (b *Broker) pushEarly(msg wire.Message, dkey store.ClientID, at store.Slot) {
	if msg.ReplyTo != "" && b.asks.waiting(msg.ReplyTo) {
		return
	}
	b.deliv.pushIf(msg.To, msg, func() bool { return dkey.IsZero() || !b.storeKnows(msg, dkey, at) })
}

// storeKnows reports whether the store already has a message's client id,
// its id or an ack of it (or cannot tell), from before this send: the send's
// own commit may land before the check (its op is queued first), and a
// message it stored as new (its index pointing to its own slot, so
// nothing was known of it) is still pushed now — left to afterSend, it
// would reach the holder after the next send's early push.
func (b *Broker) storeKnows(msg wire.Message, dkey store.ClientID, at store.Slot) bool {
	known := true
	_ = b.st.View(func(txn *store.Txn) error {
		if stored, ok := txn.MessageSlot(msg.ID); ok {
			known = stored != at
			return nil
		}
		if _, err := txn.SentID(dkey); err != store.ErrNotFound {
			// Found, or unreadable: known, unless it is this send's own
			// commit, seen in Badger before its index entry (the index is
			// updated just after the commit): its message is there.
			if err == nil {
				if own, err := txn.HasMessageAt(at); err == nil && own {
					known = false
				}
			}
			return nil
		}
		acked, err := txn.Acked(msg.To, msg.ID)
		known = acked || err != nil
		return nil
	})
	return known
}

func (b *Broker) prepareSend(req wire.SendRequest) (*preparedSend, error) {
	if err := wire.ValidateSend(&req); err != nil {
		return nil, err
	}
	seq, err := b.seq.Next()
	if err != nil {
		return nil, err
	}
	from, ok := b.sessions.get(req.From)
	if !ok {
		return nil, wire.Errorf(wire.CodeNotFound, "unknown sender session %q", req.From)
	}
	if name, host, ok := wire.SplitRemote(req.To); ok {
		return b.prepareRemoteSend(req, from, name, host, seq)
	}
	to, err := b.sessions.find(req.To, req.From)
	if err != nil {
		return nil, err
	}
	p := &preparedSend{req: req, toRow: to}
	if req.ClientMsgID != "" {
		p.dkey = store.ClientID{Scope: dedupeScope(from, to.ID), ID: req.ClientMsgID}
		// A retry of a message still being committed goes through the
		// committer behind it: answered "duplicate" only once the first is
		// on disk, stored itself if the first failed.
		p.retry = b.sends.committing(p.dkey)
	}
	if req.ExpectsReply && req.WaitSubject != "" {
		if err := b.asks.busy(req.From); err != nil {
			return nil, err
		}
		if !to.Connected {
			return nil, wire.Errorf(wire.CodePeerOffline, "%s is offline (disconnected); use `intercom send` to leave it a message", p.toRow.Target)
		}
		if !to.AcceptsAsks && !req.DeliverySet {
			p.peerBusy = true
		}
	}
	// An ask refused with peer_busy is delivered as a plain message: nobody
	// waits for its reply, so it is no obligation of the recipient (its
	// pending list stays clear and a later plain reply is not ambiguous).
	p.ask = req.ExpectsReply && !p.peerBusy
	p.msg = wire.Message{
		ID: messageID(dedupeScope(from, to.ID), req.ClientMsgID), Seq: seq,
		From: from.peer(), To: to.ID, Text: req.Text, Delivery: req.Delivery, ExpectsReply: p.ask,
		ReplyTo: req.ReplyTo, Thread: req.Thread, QueueMode: req.QueueMode,
		Attachments: req.Attachments, SentAt: time.Now().UTC(),
	}
	if err := b.gateInbound(p, from); err != nil || p.held {
		return p, err
	}
	p.slot = store.InboxSlot(to.ID, seq)
	if req.QueueMode == "replace" && !p.retry {
		p.rkey = replaceKey{from.ID, to.ID, req.Thread}
		p.took = b.sends.takeOver(p.rkey, replaceEntry{p.msg.ID, p.slot}, func(id string) bool { return b.deliv.supersede(to.ID, id) })
		if p.took.refusal != nil {
			return nil, p.took.refusal
		}
		b.deliv.hold(to.ID, p.msg.ID, time.Now().Add(replaceWindow))
	}
	if req.ClientMsgID != "" && !p.retry {
		b.sends.begin(p.dkey, p.msg.ID)
	}
	return p, nil
}
