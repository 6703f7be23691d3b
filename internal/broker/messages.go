package broker

import (
	"cmp"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Replace-mode coalescing window and caps (from the reference).
const (
	replaceWindow     = 1500 * time.Millisecond
	maxReplacePerFrom = 100
	maxReplaceAll     = 1000
)

type replaceKey struct{ from, to, thread string }

// ask is an unresolved reply obligation.
type ask struct {
	id, from, to string
	fromName     string
	fromCwd      string
	text         string
	waiter       string // subject of the waiting asker, "" when nobody waits
	sentAt       time.Time
	expires      time.Time
	timer        *time.Timer
}

// dedupeScope is whose namespace a client message id lives in: the sender's;
// but an ephemeral sender (a CLI call without --session) lives for one call,
// so a retry comes from a new session, and its ids are scoped to the
// recipient instead.
func dedupeScope(from, to *session) string {
	if from.Ephemeral {
		return "~" + to.ID
	}
	return from.ID
}

func newMsgID() string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return "m" + hex.EncodeToString(b[:])
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
	after := func(err error) { b.afterSend(m, p, err) }
	if p.remote != "" {
		after = func(err error) { b.afterRemoteSend(m, p, err) }
	}
	// Read before the committer owns p. A retry's first send was pushed
	// already; while the disk is full or the store failed nothing is pushed
	// that may be refused.
	early := p.remote == "" && !p.retry && !b.cmt.LowSpace() && b.st.Err() == nil
	msg, dkey := p.msg, p.dkey
	b.cmt.Submit(store.Op{
		Apply: func(txn *store.Txn) error { return b.applySend(txn, p) },
		After: after,
		Size:  len(m.Data),
	})
	if early {
		b.pushEarly(msg, dkey)
	}
}

// pushEarly hands a message to its holder while it is being persisted, so
// delivery does not wait for the disk. Sends are handled one at a time in
// arrival order, so pushes keep that order; the send op is queued first, so
// the holder's ack is committed after it; a retried send keeps its id
// (messageID) and an ack of a not-yet-stored id is remembered (ackedKey), so
// a crash between push and commit shows nothing twice to a holder that
// acked. Each holder has its own delivery subject (wire.Deliver), so a push
// meant for a dying holder never reaches the next one ahead of its backlog.
// Replies to a waiting ask keep the post-commit path.
//
// A message with a client id may be a retry of one committed (and perhaps
// acked) before: it is pushed early only if the store knows neither its
// client id, nor its id, nor an ack of it. The check and the push happen
// under b.mu, and an ack's reply is sent only after taking b.mu, so an ack
// committed after the check is confirmed to its holder after this push.
func (b *Broker) pushEarly(msg wire.Message, dkey string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if dkey != "" && b.knownLocked(msg, dkey) {
		return
	}
	if msg.ReplyTo != "" {
		if a := b.asks[msg.ReplyTo]; a != nil && a.waiter != "" {
			return
		}
	}
	if to := b.sessions[msg.To]; to != nil {
		b.pushLocked(to, []wire.Message{msg})
	}
}

// knownLocked reports whether the store already has a message's client id,
// its id or an ack of it (or cannot tell).
func (b *Broker) knownLocked(msg wire.Message, dkey string) bool {
	known := true
	_ = b.st.View(func(txn *store.Txn) error {
		for _, k := range []string{dkey, store.MessageIndexKey(msg.ID), store.AckedKey(msg.To, msg.ID)} {
			if _, err := txn.Get(k); err != store.ErrNotFound {
				return nil // found, or unreadable: known
			}
		}
		known = false
		return nil
	})
	return known
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
	req         wire.SendRequest
	msg         wire.Message
	key         string
	toRow       wire.Session
	ask         bool // register a reply obligation
	peerBusy    bool
	replaced    string // inbox key of the replace-mode message this one supersedes
	replacedID  string
	rkey        replaceKey
	duplicate   string // id of an earlier message with the same client id
	dkey        string // dedupe key of the client id, "" without one
	retry       bool   // an earlier send with the same client id is being committed
	prevReplace string // the replace entry this one took over, restored if it fails
	remote      string // bridged host the message goes to, "" when local

	replacedGone bool // the superseded message was deleted by this commit
}

func (b *Broker) prepareSend(req wire.SendRequest) (*preparedSend, error) {
	if err := wire.ValidateSend(&req); err != nil {
		return nil, err
	}
	seq, err := b.seq.Next()
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	from := b.sessions[req.From]
	if from == nil {
		return nil, wire.Errorf(wire.CodeNotFound, "unknown sender session %q", req.From)
	}
	if name, host, ok := wire.SplitRemote(req.To); ok {
		return b.prepareRemoteSendLocked(req, from, name, host, seq)
	}
	to, err := b.lookupLocked(req.To, req.From)
	if err != nil {
		return nil, err
	}
	p := &preparedSend{req: req, toRow: b.viewLocked(to, req.From)}
	if req.ClientMsgID != "" {
		p.dkey = store.DedupeKey(dedupeScope(from, to), req.ClientMsgID)
		// A retry of a message still being committed goes through the
		// committer behind it: answered "duplicate" only once the first is
		// on disk, stored itself if the first failed.
		p.retry = b.dedupe[p.dkey] != ""
	}
	if req.ExpectsReply && req.WaitSubject != "" {
		for _, a := range b.asks {
			if a.from == req.From && a.waiter != "" {
				return nil, wire.Errorf(wire.CodeAskBusy, "Already waiting for a reply (ask %s to %s)", a.id, a.to)
			}
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
		ID: messageID(dedupeScope(from, to), req.ClientMsgID), Seq: seq,
		From: wire.Peer{ID: from.ID, Name: from.Name, Cwd: from.Cwd},
		To:   to.ID, Text: req.Text, Delivery: req.Delivery, ExpectsReply: p.ask,
		ReplyTo: req.ReplyTo, Thread: req.Thread, QueueMode: req.QueueMode,
		Attachments: req.Attachments, SentAt: time.Now().UTC(),
	}
	p.key = store.InboxKey(to.ID, seq)
	if req.QueueMode == "replace" && !p.retry {
		p.rkey = replaceKey{from.ID, to.ID, req.Thread}
		if prev, ok := b.replace[p.rkey]; ok {
			p.prevReplace = prev
			prevID, prevKey, _ := strings.Cut(prev, " ")
			if !to.inflight[prevID] {
				to.dropped[prevID] = true
				p.replaced, p.replacedID = prevKey, prevID
			}
		} else {
			n, mine := 0, 0
			for k := range b.replace {
				n++
				if k.from == from.ID {
					mine++
				}
			}
			if mine >= maxReplacePerFrom || n >= maxReplaceAll {
				return nil, wire.Errorf(wire.CodeFull, "Replace-mode delivery queue is full; retry after pending updates are delivered.")
			}
		}
		b.replace[p.rkey] = p.msg.ID + " " + p.key
		to.held[p.msg.ID] = time.Now().Add(replaceWindow)
	}
	if req.ClientMsgID != "" && !p.retry {
		b.dedupe[p.dkey] = p.msg.ID
	}
	return p, nil
}

func (b *Broker) applySend(txn *store.Txn, p *preparedSend) error {
	p.duplicate = ""
	if p.dkey != "" { // committed earlier with the same client message id?
		if v, err := txn.Get(p.dkey); err == nil {
			p.duplicate = string(v)
			return nil
		} else if err != store.ErrNotFound {
			return err
		}
	}
	if _, err := txn.Get(store.AckedKey(p.msg.To, p.msg.ID)); err == nil {
		// Its holder acked this id before it was stored (an early push by a
		// broker that died before the commit): it was delivered.
		p.duplicate = p.msg.ID
		return nil
	} else if err != store.ErrNotFound {
		return err
	}
	if _, err := txn.Get(store.MessageIndexKey(p.msg.ID)); err == nil {
		// The same client message id, reused after its dedupe window while
		// the first message is still undelivered: it is that message.
		p.duplicate = p.msg.ID
		return nil
	}
	data, err := json.Marshal(p.msg)
	if err != nil {
		return err
	}
	if err := txn.Set(p.key, data); err != nil {
		return err
	}
	if err := txn.Set(store.MessageIndexKey(p.msg.ID), []byte(p.key)); err != nil {
		return err
	}
	if p.req.ClientMsgID != "" {
		if err := txn.SetTTL(p.dkey, []byte(p.msg.ID), b.retryMemory()); err != nil {
			return err
		}
	}
	p.replacedGone = false
	if p.replaced != "" {
		if p.replacedGone, err = deleteInboxKey(txn, p.replaced); err != nil {
			return err
		}
	}
	return nil
}

// deleteInboxKey removes an inbox entry and its id index; it reports
// whether there was one.
func deleteInboxKey(txn *store.Txn, key string) (bool, error) {
	v, err := txn.Get(key)
	if err == store.ErrNotFound {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var m wire.Message
	if json.Unmarshal(v, &m) == nil && m.ID != "" {
		if err := txn.Delete(store.MessageIndexKey(m.ID)); err != nil {
			return false, err
		}
	}
	return true, txn.Delete(key)
}

func (b *Broker) afterSend(m *nats.Msg, p *preparedSend, err error) {
	b.mu.Lock()
	if p.req.ClientMsgID != "" && !p.retry {
		delete(b.dedupe, p.dkey)
	}
	to := b.sessions[p.msg.To]
	if err != nil || p.duplicate != "" {
		if to != nil && !p.retry { // a retry's id is its first send's: leave that one's state
			delete(to.held, p.msg.ID)
			delete(to.dropped, p.replacedID)
			delete(to.inflight, p.msg.ID)
			delete(b.traces, p.msg.ID)
		}
		if p.rkey != (replaceKey{}) && b.replace[p.rkey] == p.msg.ID+" "+p.key {
			// Not stored: the message it superseded is the newest again.
			if p.prevReplace != "" && p.replaced != "" {
				b.replace[p.rkey] = p.prevReplace
			} else {
				delete(b.replace, p.rkey)
			}
		}
		b.mu.Unlock()
		if err != nil {
			respond(m, wire.Reply[wire.SendReply]{Error: toWireError(err)})
		} else {
			respond(m, wire.Reply[wire.SendReply]{Result: &wire.SendReply{ID: p.duplicate, To: p.toRow, Duplicate: true, Offline: !p.toRow.Connected}})
		}
		return
	}
	b.led.stored(p.key, &p.msg)
	if p.replacedGone {
		b.led.removed(p.replaced)
	}
	now := time.Now().UTC()
	if from := b.sessions[p.msg.From.ID]; from != nil {
		from.LastIntercomActivity = &now
	}
	reply := wire.SendReply{ID: p.msg.ID, To: p.toRow, PeerBusy: p.peerBusy}
	if to == nil { // forgotten meanwhile
		b.mu.Unlock()
		respond(m, wire.Reply[wire.SendReply]{Result: &reply})
		return
	}
	to.LastIntercomActivity = &now
	to.mailed = true
	reply.Offline = !to.Connected
	if p.replaced != "" {
		delete(to.dropped, p.replacedID)
		delete(to.held, p.replacedID)
	}
	if p.ask {
		b.addAskLocked(p)
		// The target was connected when the send was prepared; if it went
		// away while the send was committed, its disconnect retired no ask
		// yet: the asker learns it now, not at its timeout.
		if !to.Connected {
			b.retireAsksOfLocked(to.ID)
		}
	}
	// A reply to a waiting ask goes to the waiter, not the holder.
	if a := b.asks[p.msg.ReplyTo]; a != nil && a.from == p.msg.To && a.to == p.msg.From.ID {
		if a.waiter != "" {
			to.claimed[p.msg.ID] = true
			msg := p.msg
			b.publish(a.waiter, wire.AskEvent{AskID: a.id, Reply: &msg})
		}
		b.retireAskLocked(a)
	}
	if held, ok := to.held[p.msg.ID]; ok {
		time.AfterFunc(time.Until(held)+time.Millisecond, func() { b.flush(to.ID) })
	}
	b.pushLocked(to, []wire.Message{p.msg})
	b.mu.Unlock()
	respond(m, wire.Reply[wire.SendReply]{Result: &reply})
}

func (b *Broker) publish(subj string, v any) {
	data, _ := json.Marshal(v)
	if err := b.nc.Publish(subj, data); err != nil {
		b.log.Warn("publish", "subject", subj, "err", err)
	}
}

// eligibleLocked reports whether msg may be pushed to s now.
func eligibleLocked(s *session, m *wire.Message, now time.Time) bool {
	if s.inflight[m.ID] || s.dropped[m.ID] || s.claimed[m.ID] {
		return false
	}
	if t, ok := s.held[m.ID]; ok && now.Before(t) {
		return false
	}
	if m.Delivery == wire.DeliveryQueue && s.State != wire.StateIdle {
		return false
	}
	return true
}

// pushLocked sends eligible messages to s's holder, unless a flush is running
// (it will pick them up, in order).
func (b *Broker) pushLocked(s *session, msgs []wire.Message) {
	b.noteArrivalsLocked(s, msgs)
	b.wakeWaitersLocked(s.ID)
	if !s.Connected || !s.holder {
		return
	}
	if s.flushing {
		s.dirty = true
		return
	}
	now := time.Now()
	for i := range msgs {
		if eligibleLocked(s, &msgs[i], now) {
			b.pushOneLocked(s, &msgs[i], now)
		}
	}
}

// pushOneLocked hands one message to s's holder and records when.
func (b *Broker) pushOneLocked(s *session, m *wire.Message, now time.Time) {
	s.inflight[m.ID] = true
	b.recordLocked(m.ID, now, false)
	b.publish(wire.Deliver(s.ID, s.token), m)
}

// flush pushes every eligible stored message of sid to its holder, oldest
// first. Concurrent sends during a flush set dirty and are picked up by a
// rescan, so order is kept.
func (b *Broker) flush(sid string) {
	b.mu.Lock()
	s := b.sessions[sid]
	if s == nil || !s.Connected || !s.holder || s.flushing {
		if s != nil && s.flushing {
			s.dirty = true
		}
		b.mu.Unlock()
		return
	}
	s.flushing = true
	b.mu.Unlock()
	b.flushLoop(sid, s)
}

// flushLoop is flush once s.flushing has been set by the caller.
func (b *Broker) flushLoop(sid string, s *session) {
	for {
		msgs, err := b.scanInbox(sid, 0)
		b.mu.Lock()
		if err != nil {
			b.log.Warn("scan inbox", "session", sid, "err", err)
		}
		if b.sessions[sid] != s || !s.Connected {
			s.flushing, s.dirty = false, false
			b.mu.Unlock()
			return
		}
		now := time.Now()
		var next time.Time
		for i := range msgs {
			if t, ok := s.held[msgs[i].ID]; ok && now.Before(t) && (next.IsZero() || t.Before(next)) {
				next = t
			}
			if eligibleLocked(s, &msgs[i], now) {
				b.pushOneLocked(s, &msgs[i], now)
			}
		}
		if s.dirty {
			s.dirty = false
			b.mu.Unlock()
			continue
		}
		s.flushing = false
		b.mu.Unlock()
		if !next.IsZero() {
			time.AfterFunc(time.Until(next)+time.Millisecond, func() { b.flush(sid) })
		}
		return
	}
}

// scanInbox reads up to limit (0: all) stored messages of sid in order.
func (b *Broker) scanInbox(sid string, limit int) ([]wire.Message, error) {
	var out []wire.Message
	err := b.st.View(func(txn *store.Txn) error {
		return txn.Scan(store.InboxPrefix(sid), func(_ string, v []byte) (bool, error) {
			var m wire.Message
			if err := json.Unmarshal(v, &m); err != nil {
				b.log.Warn("skip unreadable message", "session", sid, "err", err)
				return true, nil
			}
			out = append(out, m)
			return limit == 0 || len(out) < limit, nil
		})
	})
	return out, err
}

// onAck removes delivered messages durably.
func (b *Broker) onAck(m *nats.Msg) {
	var req wire.AckRequest
	if err := json.Unmarshal(m.Data, &req); err != nil {
		respond(m, wire.Reply[wire.AckReply]{Error: wire.Errorf(wire.CodeBadRequest, "decode ack request: %v", err)})
		return
	}
	if err := wire.ValidateAck(req); err != nil {
		respond(m, wire.Reply[wire.AckReply]{Error: toWireError(err)})
		return
	}
	acked := 0
	var ackedIDs, ackedKeys []string
	b.cmt.Submit(store.Op{
		Apply: func(txn *store.Txn) error {
			acked, ackedIDs, ackedKeys = 0, ackedIDs[:0], ackedKeys[:0]
			for _, id := range req.IDs {
				key, err := txn.Get(store.MessageIndexKey(id))
				if err == store.ErrNotFound {
					// Not stored (any more, or yet: a message pushed early by a
					// broker that died before committing it). Remember the ack,
					// so that a retried send of it (same id) is not stored and
					// shown again after the holder was told it is acked.
					if err := txn.SetTTL(store.AckedKey(req.SessionID, id), nil, b.retryMemory()); err != nil {
						return err
					}
					if err := b.keepUnstoredTrace(txn, req.SessionID, id); err != nil {
						return err
					}
					continue
				}
				if err != nil {
					return err
				}
				if !strings.HasPrefix(string(key), store.InboxPrefix(req.SessionID)) {
					continue // not this session's message
				}
				if err := b.keepTrace(txn, id, key); err != nil {
					return err
				}
				if err := txn.Delete(store.MessageIndexKey(id)); err != nil {
					return err
				}
				if err := txn.Delete(string(key)); err != nil {
					return err
				}
				acked++
				ackedIDs = append(ackedIDs, id)
				ackedKeys = append(ackedKeys, string(key))
			}
			return nil
		},
		After: func(err error) {
			if err != nil {
				respond(m, wire.Reply[wire.AckReply]{Error: toWireError(err)})
				return
			}
			b.mu.Lock()
			for _, k := range ackedKeys {
				b.led.removed(k)
			}
			if s := b.sessions[req.SessionID]; s != nil {
				for _, id := range ackedIDs {
					delete(b.traces, id)
					delete(s.inflight, id)
					delete(s.claimed, id)
					delete(s.held, id)
				}
			}
			for k, v := range b.replace {
				id, _, _ := strings.Cut(v, " ")
				for _, a := range ackedIDs {
					if a == id {
						delete(b.replace, k)
					}
				}
			}
			b.mu.Unlock()
			respond(m, wire.Reply[wire.AckReply]{Result: &wire.AckReply{Acked: acked}})
		},
		Linger: true, // shares the next send's fsync rather than delaying it
	})
}

// inbox returns stored messages that may be delivered now, for harnesses
// that fetch at tool boundaries instead of holding a connection.
func (b *Broker) inbox(req wire.InboxRequest) (*wire.InboxReply, error) {
	out, err := b.deliverable(req.SessionID, req.Limit, !req.Peek)
	if err != nil {
		return nil, err
	}
	return &wire.InboxReply{Messages: out}, nil
}

// deliverable lists sid's stored messages that may be handed over now:
// steer and passive, queued ones when the session is idle (or has no
// holder), none held by replace-mode coalescing or claimed by an ask waiter.
func (b *Broker) deliverable(sid string, limit int, recordFetch bool) ([]wire.Message, error) {
	b.mu.Lock()
	s := b.sessions[sid]
	b.mu.Unlock()
	if s == nil {
		return nil, wire.Errorf(wire.CodeNotFound, "no session with id %q", sid)
	}
	msgs, err := b.scanInbox(sid, 0)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	out := []wire.Message{}
	for i := range msgs {
		m := &msgs[i]
		if s.dropped[m.ID] || s.claimed[m.ID] {
			continue
		}
		if t, ok := s.held[m.ID]; ok && now.Before(t) {
			continue
		}
		if m.Delivery == wire.DeliveryQueue && s.Connected && s.State != wire.StateIdle {
			continue
		}
		if recordFetch {
			b.recordLocked(m.ID, now, true)
		}
		out = append(out, *m)
		if limit > 0 && len(out) >= limit {
			break
		}
	}
	return out, nil
}

// --- asks ---

func (b *Broker) addAskLocked(p *preparedSend) {
	timeout := time.Duration(p.req.TimeoutMs) * time.Millisecond
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	a := &ask{
		id: p.msg.ID, from: p.msg.From.ID, to: p.msg.To,
		fromName: p.msg.From.Name, fromCwd: p.msg.From.Cwd, text: p.msg.Text,
		sentAt: p.msg.SentAt, expires: time.Now().Add(timeout),
	}
	if !p.peerBusy {
		a.waiter = p.req.WaitSubject
	}
	a.timer = time.AfterFunc(timeout, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.asks[a.id] == a {
			if a.waiter != "" {
				b.publish(a.waiter, wire.AskEvent{AskID: a.id, Reason: "timeout"})
			}
			b.retireAskLocked(a)
		}
	})
	b.asks[a.id] = a
}

func (b *Broker) retireAskLocked(a *ask) {
	if a.timer != nil {
		a.timer.Stop()
	}
	delete(b.asks, a.id)
}

// retireAsksOfLocked ends the obligations of a session that went away: its
// own asks are withdrawn; asks to it fail with peer_disconnected.
func (b *Broker) retireAsksOfLocked(sid string) {
	for _, a := range b.asks {
		switch sid {
		case a.from:
			b.retireAskLocked(a)
		case a.to:
			if a.waiter != "" {
				b.publish(a.waiter, wire.AskEvent{AskID: a.id, Reason: "peer_disconnected"})
			}
			b.retireAskLocked(a)
		}
	}
}

// askCancel withdraws an ask whose asker stopped waiting.
func (b *Broker) askCancel(req struct {
	SessionID string `json:"session_id"`
	AskID     string `json:"ask_id"`
}) (*wire.Empty, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if a := b.asks[req.AskID]; a != nil && a.from == req.SessionID {
		b.retireAskLocked(a)
	}
	return &wire.Empty{}, nil
}

func (b *Broker) pending(req wire.SessionRef) (*wire.PendingReply, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sessions[req.SessionID] == nil {
		return nil, wire.Errorf(wire.CodeNotFound, "no session with id %q", req.SessionID)
	}
	targets := b.targetsLocked()
	out := []wire.PendingAsk{}
	for _, a := range b.asks {
		if a.to != req.SessionID {
			continue
		}
		out = append(out, wire.PendingAsk{
			AskID: a.id, From: wire.Peer{ID: a.from, Name: a.fromName, Cwd: a.fromCwd},
			FromTarget: cmp.Or(targets[a.from], a.fromName), Text: a.text, SentAt: a.sentAt, ExpiresAt: a.expires,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].SentAt.Before(out[j].SentAt) })
	return &wire.PendingReply{Asks: out}, nil
}

// forget removes a disconnected session and its inbox.
func (b *Broker) forget(req wire.SessionRef) (*wire.Empty, error) {
	if _, _, remote := wire.SplitRemote(req.SessionID); remote {
		return b.forgetRemote(req.SessionID)
	}
	b.mu.Lock()
	s := b.sessions[req.SessionID]
	if s == nil {
		b.mu.Unlock()
		return nil, wire.Errorf(wire.CodeNotFound, "no session with id %q", req.SessionID)
	}
	if s.Connected {
		b.mu.Unlock()
		return nil, wire.Errorf(wire.CodeBadRequest, "session %s (%s) is connected; detach it before forgetting it", s.Name, s.ID)
	}
	b.forgetLocked(s)
	b.mu.Unlock()
	if err := b.dropInbox(s.ID); err != nil {
		return nil, err
	}
	if err := b.dropSubscriptions(s.ID); err != nil {
		return nil, err
	}
	b.log.Info("session forgotten", "id", s.ID, "name", s.Name)
	return &wire.Empty{}, nil
}

// forgetLocked removes a disconnected session from memory: its asks, its
// name and its pending replace-mode entries. The caller drops its store.
func (b *Broker) forgetLocked(s *session) {
	b.retireAsksOfLocked(s.ID)
	delete(b.sessions, s.ID)
	b.targets = nil
	for k := range b.replace {
		if k.to == s.ID {
			delete(b.replace, k)
		}
	}
}

// dropInbox deletes a session's record and every stored message, in chunks.
func (b *Broker) dropInbox(sid string) error {
	for {
		var keys []string
		if err := b.st.View(func(txn *store.Txn) error {
			return txn.Scan(store.InboxPrefix(sid), func(k string, _ []byte) (bool, error) {
				keys = append(keys, k)
				return len(keys) < 500, nil
			})
		}); err != nil {
			return err
		}
		var gone []string
		err := b.st.Update(func(txn *store.Txn) error {
			gone = gone[:0]
			for _, k := range keys {
				deleted, err := deleteInboxKey(txn, k)
				if err != nil {
					return err
				}
				if deleted {
					gone = append(gone, k)
				}
			}
			if len(keys) < 500 {
				return txn.Delete(store.SessionKey(sid))
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("forget session %s: %w", sid, err)
		}
		b.mu.Lock()
		for _, k := range gone {
			b.led.removed(k)
		}
		if len(keys) < 500 {
			b.led.dropSession(sid)
		}
		b.mu.Unlock()
		if len(keys) < 500 {
			return nil
		}
	}
}

// askWait re-registers a waiter for an ask sent earlier (the broker may have
// restarted, or the asked session reconnected), and hands over a reply that
// is already stored.
func (b *Broker) askWait(req wire.AskWaitRequest) (*wire.Empty, error) {
	if err := wire.ValidateAskWait(req); err != nil {
		return nil, err
	}
	b.mu.Lock()
	from, to := b.sessions[req.SessionID], b.sessions[req.To]
	if from == nil || to == nil {
		b.mu.Unlock()
		return nil, wire.Errorf(wire.CodeNotFound, "askwait: unknown session")
	}
	a := b.asks[req.AskID]
	if a == nil {
		timeout := time.Duration(req.TimeoutMs) * time.Millisecond
		if timeout <= 0 {
			timeout = 2 * time.Minute
		}
		a = &ask{id: req.AskID, from: from.ID, to: to.ID, fromName: from.Name, fromCwd: from.Cwd,
			text: req.Text, sentAt: time.Now().UTC(), expires: time.Now().Add(timeout)}
		a.timer = time.AfterFunc(timeout, func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			if b.asks[a.id] == a {
				if a.waiter != "" {
					b.publish(a.waiter, wire.AskEvent{AskID: a.id, Reason: "timeout"})
				}
				b.retireAskLocked(a)
			}
		})
		b.asks[a.id] = a
	} else if a.from != from.ID {
		b.mu.Unlock()
		return nil, wire.Errorf(wire.CodeBadRequest, "askwait: ask %s belongs to another session", req.AskID)
	}
	a.waiter = req.WaitSubject
	b.mu.Unlock()
	msgs, err := b.scanInbox(from.ID, 0)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range msgs {
		m := &msgs[i]
		if m.ReplyTo == req.AskID && m.From.ID == to.ID && !from.claimed[m.ID] {
			from.claimed[m.ID] = true
			b.publish(req.WaitSubject, wire.AskEvent{AskID: req.AskID, Reply: m})
			if b.asks[a.id] == a {
				b.retireAskLocked(a)
			}
			break
		}
	}
	return &wire.Empty{}, nil
}
