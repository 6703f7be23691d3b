package broker

import (
	"encoding/json"
	"regexp"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Messages arriving from bridged hosts. Everything in them is remote input:
// it passes the checks of a local send (wire.ValidateSend, and ValidatePublish
// for topic wake-ups), the sender must be a valid session of that host, the
// ids are namespaced by host, and the host's quotas bound what it stores.

// remoteIDRE is what a message id from another host may look like; it is
// stored as "<id>@<host>".
var remoteIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// validRemotePeer checks a remote sender like a registration.
func validRemotePeer(p wire.Peer) error {
	if err := wire.ValidID(p.ID); err != nil {
		return badRequest(err)
	}
	if err := wire.ValidateName(p.Name); err != nil {
		return badRequest(err)
	}
	if p.Cwd != "" {
		if err := wire.ValidLabel("cwd", p.Cwd); err != nil {
			return badRequest(err)
		}
	}
	return nil
}

// validSender checks the sender of a delivery from host: one of host's
// sessions; or, for a wake-up from a topic of host, a session of a third
// host that published there ("<id>@<host>", shown as name@other@host: host
// vouches for it, as the topic's keeper).
func validSender(host string, in wire.Message) error {
	id, other, relayed := wire.SplitRemote(in.From.ID)
	if !relayed {
		return validRemotePeer(in.From)
	}
	name, nameHost, _ := wire.SplitRemote(in.From.Name)
	if in.Topic == "" || nameHost != other || other == host || !wire.ValidHost(other) {
		return wire.Errorf(wire.CodeBadRequest, "bridge delivery: sender %q names another host", in.From.ID)
	}
	return validRemotePeer(wire.Peer{ID: id, Name: name, Cwd: in.From.Cwd})
}

// validRemoteMessage checks a delivery from host and returns the send it
// amounts to.
func validRemoteMessage(host string, in wire.Message) (wire.SendRequest, error) {
	bad := func(f string, a ...any) (wire.SendRequest, error) {
		return wire.SendRequest{}, wire.Errorf(wire.CodeBadRequest, "bridge delivery: "+f, a...)
	}
	if !wire.ValidHost(host) {
		return bad("invalid host %q", host)
	}
	if !remoteIDRE.MatchString(in.ID) {
		return bad("invalid message id (1-128 of A-Z a-z 0-9 _ -)")
	}
	if err := validSender(host, in); err != nil {
		return wire.SendRequest{}, err
	}
	if strings.Contains(in.To, "@") {
		return bad("target %q names another host", in.To)
	}
	sreq := wire.SendRequest{From: in.From.ID + "@" + host, To: in.To, Text: in.Text, Delivery: in.Delivery,
		ExpectsReply: in.ExpectsReply, ReplyTo: in.ReplyTo, Thread: in.Thread, QueueMode: in.QueueMode,
		Attachments: in.Attachments, ClientMsgID: in.ID, DeliverySet: true}
	if err := wire.ValidateSend(&sreq); err != nil {
		return wire.SendRequest{}, err
	}
	if len(sreq.To) > wire.MaxLabelLen {
		return bad("target too long")
	}
	if in.Topic == "" {
		if in.Event != "" || in.Resource != "" || in.Ownership != "" {
			return bad("event, resource and ownership belong to topic wake-ups")
		}
		return sreq, nil
	}
	// A topic wake-up: a publication of that host's topic.
	if strings.Contains(in.Topic, "@") {
		return bad("topic %q names another host", in.Topic)
	}
	if in.Event == wire.EventUpdate || in.Event == "" {
		return bad("an update wakes nobody")
	}
	if sreq.Delivery != wire.DeliverySteer || in.ExpectsReply || in.ReplyTo != "" || in.Thread != "" || len(in.Attachments) > 0 {
		return bad("a topic wake-up is a plain steer message")
	}
	pub := wire.PublishRequest{Topic: in.Topic, Event: in.Event, Message: in.Text, Resource: in.Resource, Ownership: in.Ownership}
	if err := wire.ValidatePublish(&pub); err != nil {
		return wire.SendRequest{}, err
	}
	return sreq, nil
}

// onBridgeDeliver stores a message that arrived from a bridged host into a
// local inbox, exactly once per remote message id.
func (b *Broker) onBridgeDeliver(m *nats.Msg) {
	var req wire.BridgeDeliver
	if err := json.Unmarshal(m.Data, &req); err != nil {
		respond(m, wire.Reply[wire.SendReply]{Error: wire.Errorf(wire.CodeBadRequest, "decode bridge delivery: %v", err)})
		return
	}
	b.deliverFromHost(m, req, len(m.Data))
}

// deliverFromHost stores one message of req.Host and answers m once it is
// committed (or refused); false means it was refused before it was handed
// to the commit (the answer is given already). size is its encoded size.
func (b *Broker) deliverFromHost(m *nats.Msg, req wire.BridgeDeliver, size int) bool {
	fail := func(err error) { respond(m, wire.Reply[wire.SendReply]{Error: toWireError(err)}) }
	in, host, lim := req.Message, req.Host, limitsOf(req.Limits)
	sreq, err := validRemoteMessage(host, in)
	if err != nil {
		fail(err)
		return false
	}
	id := in.ID + "@" + host // namespaced: never a local message's or ask's id
	dkey := store.ClientID{Scope: sreq.From, ID: in.ID}
	known := b.deliveredBefore(dkey, id)
	seq, err := b.seq.Next()
	if err != nil {
		fail(err)
		return false
	}
	body := wire.Message{Text: in.Text, Attachments: in.Attachments}
	stored := int64(body.Size())
	if err := b.routes.admit(host, lim.Hosts); err != nil {
		fail(err)
		return false
	}
	to, err := b.sessions.lookup(in.To, "")
	if err == nil && to.Ephemeral {
		err = wire.Errorf(wire.CodeNotFound, "no session matches %q", in.To)
	}
	if err != nil {
		fail(err)
		return false
	}
	hold, err := b.gateBridged(to, in.From.Name+"@"+host, sreq.From, sreq.ReplyTo)
	if err != nil {
		fail(err)
		return false
	}
	// A retry of a stored message is answered "duplicate", whatever the quota.
	if err := b.ledger.reserve(host, stored, lim, known); err != nil {
		fail(err)
		return false
	}
	p := &preparedSend{req: sreq, toRow: to, ask: in.ExpectsReply, dkey: dkey}
	p.retry = b.sends.committing(p.dkey) // answered once the first is committed (applySend)
	p.msg = wire.Message{ID: id, Seq: seq, To: to.ID,
		From: wire.Peer{ID: sreq.From, Name: in.From.Name + "@" + host, Cwd: in.From.Cwd},
		Text: sreq.Text, Delivery: sreq.Delivery, ExpectsReply: sreq.ExpectsReply, ReplyTo: sreq.ReplyTo,
		Thread: sreq.Thread, QueueMode: sreq.QueueMode, Attachments: sreq.Attachments, SentAt: sentAt(in.SentAt)}
	if in.Topic != "" { // a wake-up from a topic of that host
		p.msg.Topic, p.msg.Event, p.msg.Resource, p.msg.Ownership = in.Topic+"@"+host, in.Event, in.Resource, in.Ownership
	}
	if hold {
		b.ledger.unreserve(host, stored)
		p.held, p.ask = true, false
		b.holdSend(m, p) // accepted (held): answered there
		return true
	}
	p.slot = store.InboxSlot(to.ID, seq)
	if !p.retry {
		b.sends.begin(p.dkey, id)
	}
	// Pushed while it is persisted, as a local send is (pushEarly): across
	// the hub a message was two commits in series before its holder saw
	// it, the sender's outbox and this inbox. Read before the committer
	// owns p; a retry (known, or one being committed), an ask, and a full
	// or failed store keep the post-commit path.
	early := !known && !p.retry && !p.ask && !b.cmt.LowSpace() && b.st.Err() == nil
	msg, slot := p.msg, p.slot
	b.cmt.Submit(store.Op{
		Apply: func(txn *store.Txn) error { return b.applySend(txn, p) },
		After: func(err error) {
			b.ledger.unreserve(host, stored)
			b.afterSend(m, p, err)
		},
		Size: size,
	})
	if early {
		b.pushEarly(msg, dkey, slot)
	}
	return true
}

// deliveredBefore reports whether a remote message was stored already (its
// client id or its id is known).
func (b *Broker) deliveredBefore(dkey store.ClientID, id string) bool {
	known := false
	_ = b.st.View(func(txn *store.Txn) error {
		if _, err := txn.SentID(dkey); err == nil {
			known = true
		}
		if _, ok := txn.MessageSlot(id); ok {
			known = true
		}
		return nil
	})
	return known
}

// sentAt keeps a remote send time unless it is unset or in the future.
func sentAt(t time.Time) time.Time {
	now := time.Now().UTC()
	if t.IsZero() || t.After(now.Add(time.Minute)) {
		return now
	}
	return t.UTC()
}
