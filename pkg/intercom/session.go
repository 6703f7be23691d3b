package intercom

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/internal/presence"
	"github.com/intercom-dev/intercom/pkg/wire"
)

func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// AttachOptions describe the session to register.
type AttachOptions struct {
	Name        string // "" gets the alias session-<8 hex>
	ResumeID    string // re-attach this existing session
	RequestID   string // preferred id for a new session (resumed if it exists and is free)
	Cwd         string // "" = current directory
	Model       string
	Status      string // initial status, default idle
	AcceptsAsks *bool
	Ephemeral   bool // forgotten when the connection ends (CLI one-shots)
	NoDeliver   bool // register without receiving pushes
	// Exact: RequestID or nothing. The session with that id is created when
	// unknown and resumed when free; when another live holder has it, Attach
	// fails with ErrHeld instead of registering a new session under another
	// id.
	Exact bool
	// Supervisor is the session's supervisor (id or name): its messages
	// always wake it (the broker's wake budget). "" reads
	// INTERCOM_SUPERVISOR, set in a supervised run's child.
	Supervisor string
}

// Session is a session held by this client: it stays connected while the
// client lives, is re-registered with the same id after a reconnect, and
// receives pushed messages on Messages.
type Session struct {
	c    *Client
	opts AttachOptions

	mu      sync.Mutex
	info    wire.Session
	resumed bool // the broker knew the session before Attach
	status  string
	accept  *bool
	sub     *nats.Subscription
	token   string // this holder's delivery token
	msgs    chan wire.Message
	pushed  []wire.Message // onPush's decoding buffer
	done    bool
	stopped chan struct{} // closed by stop

	// Delivery bookkeeping (acks.go): per id, whether it was handed on and
	// acked by the consumer, and whether its ack is owed (not confirmed by
	// the broker yet); the ids handed on, oldest first; how many are owed.
	acks     map[string]ackState
	order    []string
	owed     int
	retrying bool
	kick     chan struct{}
}

// Attach registers a session and holds it.
func (c *Client) Attach(ctx context.Context, o AttachOptions) (*Session, error) {
	if o.Name != "" {
		if err := wire.ValidateName(o.Name); err != nil {
			return nil, wire.Errorf(wire.CodeBadRequest, "%v", err)
		}
	}
	s := &Session{c: c, opts: o, msgs: make(chan wire.Message, 64), status: o.Status, accept: o.AcceptsAsks,
		stopped: make(chan struct{}), acks: map[string]ackState{}, kick: make(chan struct{}, 1)}
	id := o.ResumeID
	if id == "" {
		id = o.RequestID
	}
	if id == "" {
		id = presence.NewID()
	}
	if err := s.subscribe(id); err != nil {
		return nil, err
	}
	// Acks a fetching process of this session left owed go first, so the
	// backlog flushed to this holder no longer holds what was shown.
	if err := c.settleJournal(ctx, id); err != nil {
		c.log.Debug("journaled acks not confirmed", "session", id, "err", err)
	}
	info, err := s.register(ctx, id, o.ResumeID != "")
	if err != nil {
		s.stop()
		return nil, err
	}
	if info.ID != id { // requested id was taken: follow the one we got
		if err := s.subscribe(info.ID); err != nil {
			return nil, err
		}
		if info, err = s.register(ctx, info.ID, true); err != nil {
			s.stop()
			return nil, err
		}
	}
	c.mu.Lock()
	c.holders[s] = true
	c.mu.Unlock()
	return s, nil
}

func (s *Session) subscribe(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sub != nil {
		_ = s.sub.Unsubscribe()
		s.sub = nil
	}
	if s.opts.NoDeliver {
		return nil
	}
	s.token = randomID() // fresh per holder: no push meant for an earlier one reaches it
	sub, err := s.c.nc.Subscribe(wire.Deliver(id, s.token), s.onPush)
	if err != nil {
		return fmt.Errorf("subscribe deliveries: %w", err)
	}
	_ = sub.SetPendingLimits(-1, -1)
	s.sub = sub
	return s.c.nc.Flush()
}

func (s *Session) register(ctx context.Context, id string, resume bool) (wire.Session, error) {
	cid, err := s.c.nc.GetClientID()
	if err != nil {
		return wire.Session{}, fmt.Errorf("register: %w", err)
	}
	cwd, proj := Here(s.opts.Cwd)
	s.mu.Lock()
	name := s.opts.Name
	if s.info.Name != "" && name == "" && !presenceAlias(s.info) {
		name = s.info.Name
	}
	req := wire.RegisterRequest{
		ID: id, Resume: resume, Name: name, Cwd: cwd, Project: proj, Model: s.opts.Model,
		Status: s.status, AcceptsAsks: s.accept, ClientID: cid, Ephemeral: s.opts.Ephemeral,
		Holder: !s.opts.NoDeliver, HolderToken: s.token, Batches: !s.opts.NoDeliver, Exact: s.opts.Exact && id == s.opts.RequestID,
		Supervisor: cmp.Or(s.opts.Supervisor, os.Getenv("INTERCOM_SUPERVISOR")),
	}
	s.mu.Unlock()
	res, err := call[wire.RegisterReply](ctx, s.c, wire.SubjRegister, req)
	if err != nil {
		return wire.Session{}, err
	}
	s.mu.Lock()
	if s.info.ID == "" {
		s.resumed = res.Resumed
	}
	s.info = res.Session
	s.mu.Unlock()
	return res.Session, nil
}

func presenceAlias(info wire.Session) bool { return info.Name == presence.Alias(info.ID) }

// onReconnect re-registers every held session on the new connection.
func (c *Client) onReconnect() {
	c.reconnMu.Lock()
	defer c.reconnMu.Unlock()
	c.mu.Lock()
	hs := make([]*Session, 0, len(c.holders))
	for s := range c.holders {
		hs = append(hs, s)
	}
	c.mu.Unlock()
	for _, s := range hs {
		id := s.ID()
		actx, acancel := context.WithTimeout(context.Background(), c.timeout)
		s.ackBeforeRegister(actx)
		acancel()
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		_, err := s.register(ctx, id, true)
		if errors.Is(err, ErrNotFound) { // the broker lost it (ephemeral, or a fresh store)
			_, err = s.register(ctx, id, false)
		}
		cancel()
		if err != nil {
			c.log.Warn("re-register after reconnect", "session", id, "err", err)
		} else {
			c.log.Info("session re-registered", "session", id)
		}
	}
	c.mu.Lock()
	hooks := append([]func(){}, c.hooks...)
	close(c.reconn)
	c.reconn = make(chan struct{})
	c.mu.Unlock()
	for _, fn := range hooks {
		go fn()
	}
}

func (s *Session) onPush(m *nats.Msg) {
	// One push at a time (a subscription's handler): the buffer is ours.
	msgs, err := wire.DecodePushed(m.Data, s.pushed[:0])
	s.pushed = msgs[:0]
	if err != nil {
		s.c.log.Warn("undecodable push", "err", err)
		return
	}
	handOn := msgs[:0] // in place: each is read before it is overwritten
	reack := false
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return
	}
	for i := range msgs {
		hand, again := s.admitLocked(msgs[i].ID)
		reack = reack || again
		if hand {
			handOn = append(handOn, msgs[i])
		}
	}
	s.mu.Unlock()
	if reack {
		s.retryAcksLater(true)
	}
	for i := range handOn {
		s.msgs <- handOn[i]
	}
}

// Messages delivers pushed messages, oldest first, each once per holder.
// Ack each after handing it on; unacked ones come back after a reconnect,
// acked ones are acked again if the broker pushes them again (see Ack).
func (s *Session) Messages() <-chan wire.Message { return s.msgs }

// ID is the session id.
func (s *Session) ID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.info.ID
}

// Info is the session row as last registered.
func (s *Session) Info() wire.Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.info
}

// Resumed reports whether the broker already knew the session when Attach
// registered it (as it logs it), rather than creating it.
func (s *Session) Resumed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resumed
}

// SetState reports the holder's lifecycle; it is kept for re-registration.
func (s *Session) SetState(ctx context.Context, status string, acceptsAsks *bool) error {
	s.mu.Lock()
	s.status, s.accept = status, acceptsAsks
	s.mu.Unlock()
	_, err := s.c.SetState(ctx, s.ID(), status, acceptsAsks)
	return err
}

// Detach unregisters the session (it stays known, state disconnected) and
// stops receiving. Acks still owed are sent first (within ctx).
func (s *Session) Detach(ctx context.Context) error {
	id := s.ID()
	if err := s.sendAcks(ctx, s.pendingIDs()); err != nil {
		s.c.log.Warn("acks not confirmed at detach; the messages will be delivered again", "session", id, "err", err)
	}
	s.stop()
	s.c.mu.Lock()
	delete(s.c.holders, s)
	s.c.mu.Unlock()
	return s.c.Unregister(ctx, id)
}

func (s *Session) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sub != nil {
		_ = s.sub.Unsubscribe()
		s.sub = nil
	}
	if !s.done {
		s.done = true
		close(s.stopped)
	}
}
