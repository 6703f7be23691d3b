package broker

import (
	"errors"
	"io/fs"
	"time"

	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// A person's decision on a held message (inbound.go): refused, its record
// says so and nothing is stored; approved, it is committed to the
// recipient's inbox like a send and pushed to its holder, once (a second
// approval, or one after a crash between the commit and the record's
// update, finds it in the store).

func (b *Broker) heldDecide(req wire.HeldDecideRequest) (*wire.HeldDecideReply, error) {
	by, ok := b.sessions.get(req.By)
	if !ok {
		return nil, wire.Errorf(wire.CodeNotFound, "unknown session %q", req.By)
	}
	if !b.fromPerson(by.cid, by.ID, by.Host) {
		return nil, wire.Errorf(wire.CodeRefused, "only a person decides on held messages: run `intercom held` from a terminal or `intercom ui`, not from an agent")
	}
	t := &b.inbound
	t.mu.Lock()
	defer t.mu.Unlock()
	rec, err := b.readHeld(req.ID)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, wire.Errorf(wire.CodeNotFound, "no held message %q (see `intercom held`)", req.ID)
	} else if err != nil {
		return nil, err
	}
	want := wire.DecisionRefused
	if req.Approve {
		want = wire.DecisionApproved
	}
	reply := &wire.HeldDecideReply{ID: rec.Message.ID, To: rec.ToName, Decision: want}
	switch rec.Decision {
	case want:
		return reply, nil
	case "":
	default:
		return nil, wire.Errorf(wire.CodeBadRequest, "message %s was %s already", rec.Message.ID, rec.Decision)
	}
	if req.Approve {
		if err := b.releaseHeld(rec); err != nil {
			return nil, err
		}
	}
	now := time.Now().UTC()
	rec.Decision, rec.DecidedAt = want, &now
	if err := b.writeHeld(rec); err != nil {
		return nil, err
	}
	b.log.Info("held message decided", "id", rec.Message.ID, "decision", want, "by", by.Name)
	return reply, nil
}

// releaseHeld stores an approved message in its recipient's inbox and
// delivers it.
func (b *Broker) releaseHeld(rec heldRecord) error {
	to, ok := b.sessions.get(rec.Message.To)
	if !ok {
		return wire.Errorf(wire.CodeNotFound, "%s is gone (forgotten); the message stays held", rec.ToName)
	}
	seq, err := b.seq.Next()
	if err != nil {
		return err
	}
	p := &preparedSend{msg: rec.Message, toRow: to.Session}
	p.msg.Seq = seq
	p.slot = store.InboxSlot(to.ID, seq)
	done := make(chan error, 1)
	b.cmt.Submit(store.Op{
		Apply: func(txn *store.Txn) error { return b.applySend(txn, p) },
		After: func(err error) { done <- err },
		Size:  p.msg.Size(),
	})
	if err := <-done; err != nil {
		return err
	}
	if p.duplicate != "" { // approved before (the record's update was lost)
		return nil
	}
	b.ledger.stored(p.slot, &p.msg)
	if known, _ := b.sessions.stored(p.msg.From.ID, to.ID, time.Now().UTC(), nil, 0); known {
		b.deliv.push(to.ID, p.msg)
	}
	return nil
}

// heldTrace is the timeline of a message that was held and not stored
// (held still, or refused); ok false when id was never held.
func (b *Broker) heldTrace(id string) (*wire.Trace, bool) {
	rec, err := b.readHeld(id)
	if err != nil {
		return nil, false
	}
	held := rec.HeldAt
	tr := &wire.Trace{ID: id, From: rec.Message.From, To: rec.Message.To, FromPerson: rec.Message.FromPerson,
		State: wire.TraceHeld, HeldAt: &held, DecidedAt: rec.DecidedAt, Decision: rec.Decision}
	if rec.Decision == wire.DecisionRefused {
		tr.State = wire.TraceRefused
	}
	return tr, true
}

// noteHeld adds to a stored message's timeline when it was held and
// approved.
func (b *Broker) noteHeld(tr *wire.Trace) {
	if h, ok := b.heldTrace(tr.ID); ok {
		tr.HeldAt, tr.DecidedAt, tr.Decision = h.HeldAt, h.DecidedAt, h.Decision
		tr.FromPerson = tr.FromPerson || h.FromPerson
	}
}
