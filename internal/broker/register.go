package broker

import (
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Registration and connection events: the request handlers of sessions.go.

func (b *Broker) register(req wire.RegisterRequest) (*wire.RegisterReply, error) {
	if err := wire.ValidateRegister(&req); err != nil {
		return nil, err
	}
	if req.ClientID != 0 && !b.connOpen(req.ClientID) {
		return nil, wire.Errorf(wire.CodeBadRequest, "register: connection %d is not open", req.ClientID)
	}
	// Is the connection of the session's current holder still open? Asked
	// without a lock held (the server answers under its own locks); if the
	// holder changes meanwhile, the newer one counts as open.
	prevCID, prevOpen := b.sessions.holderOther(req.ID, req.ClientID), false
	if prevCID != 0 {
		prevOpen = b.connOpen(prevCID)
	}
	reg, err := b.sessions.register(req, prevCID, prevOpen, time.Now().UTC())
	if err != nil {
		return nil, err
	}
	if !req.Ephemeral {
		if err := b.saveRecord(reg.rec); err != nil {
			return nil, err
		}
	}
	b.log.Info("session registered", "id", reg.row.ID, "name", reg.row.Name, "resumed", reg.existed, "holder", req.Holder)
	return &wire.RegisterReply{Session: reg.row, Resumed: reg.existed}, nil
}

// saveRecord persists a session's record.
func (b *Broker) saveRecord(rec store.SessionRecord) error {
	return b.st.Update(func(txn *store.Txn) error { return txn.PutSession(rec) })
}

// afterDetach persists the record of a session that lost its connection,
// or drops the inbox of an ephemeral one, in the background.
func (b *Broker) afterDetach(d detached, why string) {
	if d.ephemeral {
		b.tasks.Go(func() { _ = b.dropInbox(d.id) })
	} else {
		b.tasks.Go(func() { _ = b.saveRecord(d.rec) })
	}
	b.log.Info("session "+why, "id", d.id, "name", d.name)
}

func (b *Broker) unregister(req wire.SessionRef) (*wire.Empty, error) {
	d, err := b.sessions.unregister(req.SessionID)
	if err != nil {
		return nil, err
	}
	if d != nil {
		b.afterDetach(*d, "unregistered")
	}
	return &wire.Empty{}, nil
}

func (b *Broker) setState(req wire.StateRequest) (*wire.Session, error) {
	if err := wire.ValidateState(req); err != nil {
		return nil, err
	}
	out, becameIdle, err := b.sessions.setState(req)
	if err != nil {
		return nil, err
	}
	b.resv.touch(out.ID) // activity renews its reservations
	if becameIdle {
		b.waiters.wake(out.ID) // queued messages are deliverable now
		b.tasks.Go(func() { b.deliv.flush(out.ID) })
	}
	return &out, nil
}

// connWatcher is the gateway's word on the client connections (every one
// but the broker's own comes through it): one opening counts a client (the
// idle exit, stats), one closing detaches the sessions it held. The gateway
// tells of a connection's opening before the client can send, and of its
// closing after, from one goroutine: the two never cross. Once the broker
// is stopping, neither is heeded (as no request is).
type connWatcher struct{ b *Broker }

func (w connWatcher) Opened(cid uint64) {
	if !w.b.calls.enter() {
		return
	}
	defer w.b.calls.leave()
	w.b.idle.connected(cid)
}

func (w connWatcher) Closed(cid uint64) {
	b := w.b
	if !b.calls.enter() {
		return
	}
	defer b.calls.leave()
	for _, d := range b.sessions.connClosed(cid) {
		b.afterDetach(d, "disconnected")
	}
	b.idle.disconnected(cid)
}

// connOpen reports whether the NATS client cid is connected now.
func (b *Broker) connOpen(cid uint64) bool {
	cz, err := b.srv.Connz(&server.ConnzOptions{CID: cid})
	return err == nil && len(cz.Conns) == 1 && cz.Conns[0].Stop == nil
}
