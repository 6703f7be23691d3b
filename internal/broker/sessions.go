package broker

import (
	"encoding/json"
	"errors"
	"maps"
	"sort"
	"strings"
	"time"

	"github.com/intercom-dev/intercom/internal/presence"
	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// session is the broker's view of one session.
type session struct {
	wire.Session
	acceptsSet *bool                // explicit accepts_asks from the holder
	cid        uint64               // holding NATS connection, 0 when none
	holder     bool                 // wants pushes on wire.Deliver(id, token)
	token      string               // the holder's delivery token
	inflight   map[string]bool      // pushed to the holder, not yet acked
	held       map[string]time.Time // replace-mode messages held until then
	dropped    map[string]bool      // replaced, deletion in flight
	claimed    map[string]bool      // replies handed to an ask waiter
	flushing   bool
	dirty      bool
	mailed     bool // a message was ever stored for it (gc.go never forgets it)
	created    time.Time
}

// record is what is persisted of a session.
type record struct {
	ID       string    `json:"id"`
	Name     string    `json:"name"`
	Cwd      string    `json:"cwd"`
	Project  string    `json:"project"`
	Model    string    `json:"model,omitempty"`
	Created  time.Time `json:"created"`
	LastSeen time.Time `json:"last_seen"`
	Mailed   bool      `json:"mailed,omitempty"`
}

func newSession(id string, created time.Time) *session {
	return &session{
		Session:  wire.Session{ID: id},
		created:  created,
		inflight: map[string]bool{}, held: map[string]time.Time{},
		dropped: map[string]bool{}, claimed: map[string]bool{},
	}
}

func (s *session) record() record {
	return record{ID: s.ID, Name: s.Name, Cwd: s.Cwd, Project: s.Project, Model: s.Model, Created: s.created, LastSeen: s.LastSeen, Mailed: s.mailed}
}

func (b *Broker) loadSessions() error {
	return b.st.View(func(txn *store.Txn) error {
		return txn.Scan(store.SessionPrefix, func(_ string, v []byte) (bool, error) {
			var r record
			if err := json.Unmarshal(v, &r); err != nil {
				b.log.Warn("skip unreadable session record", "err", err)
				return true, nil
			}
			s := newSession(r.ID, r.Created)
			s.Name, s.Cwd, s.Project, s.Model = r.Name, r.Cwd, r.Project, r.Model
			s.State, s.LastSeen, s.mailed = wire.StateDisconnected, r.LastSeen, r.Mailed
			b.sessions[r.ID] = s
			return true, nil
		})
	})
}

func (b *Broker) persistLastSeen() {
	b.mu.Lock()
	var recs []record
	for _, s := range b.sessions {
		if !s.Ephemeral {
			if s.Connected {
				s.LastSeen = time.Now().UTC()
			}
			recs = append(recs, s.record())
		}
	}
	b.mu.Unlock()
	_ = b.st.Update(func(txn *store.Txn) error {
		for _, r := range recs {
			data, _ := json.Marshal(r)
			if err := txn.Set(store.SessionKey(r.ID), data); err != nil {
				return err
			}
		}
		return nil
	})
}

func (b *Broker) register(req wire.RegisterRequest) (*wire.RegisterReply, error) {
	if err := wire.ValidateRegister(&req); err != nil {
		return nil, err
	}
	if req.ClientID != 0 && !b.connOpen(req.ClientID) {
		return nil, wire.Errorf(wire.CodeBadRequest, "register: connection %d is not open", req.ClientID)
	}
	// Is the connection of the session's current holder still open? Asked
	// before taking the lock (the server answers under its own locks); if the
	// holder changes meanwhile, the newer one counts as open.
	prevCID, prevOpen := uint64(0), false
	b.mu.Lock()
	if s := b.sessions[req.ID]; req.ID != "" && s != nil && s.Connected && s.cid != 0 && s.cid != req.ClientID {
		prevCID = s.cid
	}
	b.mu.Unlock()
	if prevCID != 0 {
		prevOpen = b.connOpen(prevCID)
	}
	now := time.Now().UTC()
	b.mu.Lock()
	if _, closed := b.gone[req.ClientID]; closed && req.ClientID != 0 {
		// The connection closed between the check above and now: do not
		// mark a session connected to it forever.
		b.mu.Unlock()
		return nil, wire.Errorf(wire.CodeBadRequest, "register: connection %d is not open", req.ClientID)
	}
	s, existed := b.sessions[req.ID]
	switch {
	case req.ID == "":
		s = nil
	case existed && s.Connected && s.cid != 0 && s.cid != req.ClientID && (s.cid != prevCID || prevOpen):
		if req.Resume || req.Exact {
			name := s.Name
			b.mu.Unlock()
			return nil, wire.Errorf(wire.CodeHeld, "session %s (%s) is held by another running holder; stop that holder first", req.ID, name)
		}
		s, existed = nil, false
		req.ID = ""
	case !existed && req.Resume:
		b.mu.Unlock()
		return nil, wire.Errorf(wire.CodeNotFound, "no session with id %q to resume", req.ID)
	}
	if s == nil {
		id := req.ID
		if id == "" {
			id = presence.NewID()
		}
		s = newSession(id, now)
		existed = false
	}
	if req.Name != "" {
		s.Name = req.Name
	} else if s.Name == "" {
		s.Name = presence.Alias(s.ID)
	}
	s.Cwd, s.Project, s.Ephemeral = req.Cwd, req.Project, req.Ephemeral
	if req.Model != "" {
		s.Model = req.Model
	}
	s.Status, s.acceptsSet = req.Status, req.AcceptsAsks
	b.applyStateLocked(s)
	s.Connected, s.LastSeen = true, now
	if s.cid != 0 && s.cid != req.ClientID {
		b.unmapCIDLocked(s.cid, s.ID)
	}
	s.cid, s.holder, s.token = req.ClientID, req.Holder, req.HolderToken
	s.inflight, s.claimed = map[string]bool{}, map[string]bool{} // a new holder gets every unacked message again
	// A new holder gets its backlog first: mark the flush as running now, so
	// a send arriving before the flush goroutine starts is not pushed ahead
	// of older stored messages (it sets dirty and the flush picks it up).
	startFlush := false
	if req.Holder {
		if s.flushing {
			s.dirty = true
		} else {
			s.flushing, startFlush = true, true
		}
	}
	if req.ClientID != 0 {
		if b.byCID[req.ClientID] == nil {
			b.byCID[req.ClientID] = map[string]bool{}
		}
		b.byCID[req.ClientID][s.ID] = true
	}
	b.sessions[s.ID] = s
	b.targets = nil // names or the set of sessions changed
	rec := s.record()
	out := b.viewLocked(s, s.ID)
	b.mu.Unlock()
	if startFlush {
		go b.flushLoop(s.ID, s)
	}
	if !req.Ephemeral {
		data, _ := json.Marshal(rec)
		if err := b.st.Update(func(txn *store.Txn) error { return txn.Set(store.SessionKey(rec.ID), data) }); err != nil {
			return nil, err
		}
	}
	b.log.Info("session registered", "id", s.ID, "name", out.Name, "resumed", existed, "holder", req.Holder)
	return &wire.RegisterReply{Session: out, Resumed: existed}, nil
}

// applyStateLocked derives State and AcceptsAsks from the status.
func (b *Broker) applyStateLocked(s *session) {
	s.State = presence.DeriveState(s.Status, s.acceptsSet)
	if s.acceptsSet != nil {
		s.AcceptsAsks = *s.acceptsSet
	} else {
		s.AcceptsAsks = s.State == wire.StateIdle
	}
}

// detachLocked marks s disconnected (or removes it if ephemeral) and retires
// the asks that depended on it.
func (b *Broker) detachLocked(s *session, why string) {
	s.Connected, s.cid, s.holder = false, 0, false
	s.State, s.AcceptsAsks = wire.StateDisconnected, false
	s.LastSeen = time.Now().UTC()
	s.inflight, s.claimed = map[string]bool{}, map[string]bool{}
	b.retireAsksOfLocked(s.ID)
	if s.Ephemeral {
		delete(b.sessions, s.ID)
		b.targets = nil
		go b.dropInbox(s.ID)
	} else {
		rec := s.record()
		go func() {
			data, _ := json.Marshal(rec)
			_ = b.st.Update(func(txn *store.Txn) error { return txn.Set(store.SessionKey(rec.ID), data) })
		}()
	}
	b.log.Info("session "+why, "id", s.ID, "name", s.Name)
}

func (b *Broker) unregister(req wire.SessionRef) (*wire.Empty, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.sessions[req.SessionID]
	if s == nil {
		return nil, wire.Errorf(wire.CodeNotFound, "no session with id %q", req.SessionID)
	}
	if s.Connected {
		b.unmapCIDLocked(s.cid, s.ID)
		b.detachLocked(s, "unregistered")
	}
	return &wire.Empty{}, nil
}

// viewLocked returns the public row of s with its target and counts.
func (b *Broker) viewLocked(s *session, self string) wire.Session {
	r := s.Session
	r.Target = b.targetsLocked()[s.ID]
	r.Self = s.ID == self
	for _, a := range b.asks {
		if a.to == s.ID {
			r.PendingAsks++
		}
	}
	return r
}

// targetsLocked returns every session's display target; it is recomputed
// only after the set of sessions or their names changed.
func (b *Broker) targetsLocked() map[string]string {
	if b.targets != nil {
		return b.targets
	}
	rows := make([]*wire.Session, 0, len(b.sessions))
	for _, s := range b.sessions {
		rows = append(rows, &wire.Session{ID: s.ID, Name: s.Name})
	}
	presence.AssignTargets(rows)
	b.targets = make(map[string]string, len(rows))
	for _, r := range rows {
		b.targets[r.ID] = r.Target
	}
	return b.targets
}

// rowsLocked returns every known session with targets assigned.
func (b *Broker) rowsLocked(self string) []*wire.Session {
	rows := make([]*wire.Session, 0, len(b.sessions))
	pending := map[string]int{}
	for _, a := range b.asks {
		pending[a.to]++
	}
	targets := b.targetsLocked()
	for _, s := range b.sessions {
		r := s.Session
		r.PendingAsks = pending[s.ID]
		r.Self = s.ID == self
		r.Target = targets[s.ID]
		rows = append(rows, &r)
	}
	return rows
}

func (b *Broker) list(req wire.ListRequest) (*wire.ListReply, error) {
	if err := wire.ValidateList(&req); err != nil {
		return nil, err
	}
	scope := req.Scope
	b.mu.Lock()
	rows := b.rowsLocked(req.Self)
	if scope == "all" {
		for _, r := range b.remoteRowsLocked() {
			rows = append(rows, &r)
		}
	}
	b.mu.Unlock()
	out := make([]wire.Session, 0, len(rows))
	for _, r := range rows {
		if r.Self {
			out = append(out, *r)
			continue
		}
		if r.Ephemeral || (!r.Connected && !req.IncludeDisconnected) {
			continue
		}
		if scope == "project" && req.Project != "" && r.Project != req.Project && r.Host == "" {
			continue
		}
		out = append(out, *r)
	}
	if len(out) > 0 {
		counts := b.queuedCounts()
		for i := range out {
			if out[i].Host == "" { // a remote row keeps what its host reported
				out[i].Queued = counts[out[i].ID]
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Self != out[j].Self {
			return out[i].Self
		}
		if out[i].Connected != out[j].Connected {
			return out[i].Connected
		}
		if ni, nj := strings.ToLower(out[i].Name), strings.ToLower(out[j].Name); ni != nj {
			return ni < nj
		}
		return out[i].ID < out[j].ID
	})
	return &wire.ListReply{Sessions: out}, nil
}

func (b *Broker) setState(req wire.StateRequest) (*wire.Session, error) {
	if err := wire.ValidateState(req); err != nil {
		return nil, err
	}
	b.mu.Lock()
	s := b.sessions[req.SessionID]
	if s == nil {
		b.mu.Unlock()
		return nil, wire.Errorf(wire.CodeNotFound, "no session with id %q", req.SessionID)
	}
	if !s.Connected {
		b.mu.Unlock()
		return nil, wire.Errorf(wire.CodePeerOffline, "session %s (%s) is not connected; attach it first", s.Name, s.ID)
	}
	wasIdle := s.State == wire.StateIdle
	if req.Status != "" {
		s.Status = req.Status
	}
	if req.AcceptsAsks != nil {
		v := *req.AcceptsAsks
		s.acceptsSet = &v
	} else if req.Status != "" {
		s.acceptsSet = nil
	}
	b.applyStateLocked(s)
	s.LastSeen = time.Now().UTC()
	out := b.viewLocked(s, s.ID)
	nowIdle := s.State == wire.StateIdle
	b.mu.Unlock()
	if nowIdle && !wasIdle {
		b.mu.Lock()
		b.wakeWaitersLocked(s.ID) // queued messages are deliverable now
		b.mu.Unlock()
		go b.flush(s.ID)
	}
	return &out, nil
}

// lookupLocked resolves a target for a sender.
func (b *Broker) lookupLocked(target, self string) (*session, error) {
	if s := b.sessions[target]; s != nil && target != self { // an exact id
		return s, nil
	}
	rows := b.rowsLocked(self)
	r, err := presence.Resolve(rows, target, self)
	if err != nil {
		var amb *presence.AmbiguousError
		switch {
		case errors.As(err, &amb):
			return nil, &wire.Error{Code: wire.CodeAmbiguous, Message: err.Error(), Choices: amb.Choices}
		case errors.Is(err, presence.ErrSelf):
			return nil, wire.Errorf(wire.CodeSelf, "Cannot message the current session (%s)", target)
		case errors.Is(err, presence.ErrShort):
			return nil, wire.Errorf(wire.CodeBadRequest, "%v", err)
		default:
			return nil, wire.Errorf(wire.CodeNotFound, "no session matches %q (see `intercom list --scope all --all`)", target)
		}
	}
	return b.sessions[r.ID], nil
}

// unmapCIDLocked forgets that connection cid holds session sid.
func (b *Broker) unmapCIDLocked(cid uint64, sid string) {
	if m := b.byCID[cid]; m != nil {
		delete(m, sid)
		if len(m) == 0 {
			delete(b.byCID, cid)
		}
	}
}

// queuedCounts returns every session's stored, unacknowledged messages, as
// the ledger counts them (no store scan).
func (b *Broker) queuedCounts() map[string]int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return maps.Clone(b.led.queued)
}
