package broker

import (
	"sync"
	"time"

	"github.com/intercom-dev/intercom/internal/presence"
	"github.com/intercom-dev/intercom/internal/store"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Sessions and presence: who is registered, by which connection, in which
// state. The rows clients see are built in list.go; the request handlers
// are in register.go.

// session is the broker's view of one session.
type session struct {
	wire.Session
	acceptsSet *bool  // explicit accepts_asks from the holder
	cid        uint64 // holding NATS connection, 0 when none
	mailed     bool   // a message was ever stored for it (gc.go never forgets it)
	created    time.Time
	boundary   time.Time // its last lifecycle report (register, state): stuck.go
}

// record is what is persisted of a session.
func (s *session) record() store.SessionRecord {
	return store.SessionRecord{ID: s.ID, Name: s.Name, Cwd: s.Cwd, Project: s.Project, Model: s.Model, Created: s.created, LastSeen: s.LastSeen, Mailed: s.mailed}
}

func (s *session) peer() wire.Peer { return wire.Peer{ID: s.ID, Name: s.Name, Cwd: s.Cwd} }

// applyState derives State and AcceptsAsks from the status.
func (s *session) applyState() {
	s.State = presence.DeriveState(s.Status, s.acceptsSet)
	if s.acceptsSet != nil {
		s.AcceptsAsks = *s.acceptsSet
	} else {
		s.AcceptsAsks = s.State == wire.StateIdle
	}
}

// sessionTable holds every known session, the connections holding them and
// the connections that closed lately. Lock order: sendState.mu may be held
// around it; inside its own lock it takes askTable.mu (retiring and counting
// asks) and delivery.mu (attach, detach, idle), never the reverse.
type sessionTable struct {
	mu      sync.Mutex
	byID    map[string]*session
	byCID   map[uint64]map[string]bool // holding connection -> its session ids
	gone    closedConns                // recently closed connections (register races)
	targets map[string]string          // display targets; nil after sessions change
	index   *targetIndex               // send targets by name; nil with targets
	order   []*session                 // sessions in list order (list.go); nil after sessions change
	asks    *askTable
	deliv   *delivery
	stalls  stallRule // marks the rows of stuck sessions (stuck.go)
}

func newSessionTable(asks *askTable, deliv *delivery) *sessionTable {
	return &sessionTable{byID: map[string]*session{}, byCID: map[uint64]map[string]bool{}, asks: asks, deliv: deliv}
}

// load reads the stored sessions, all disconnected.
func (t *sessionTable) load(st *store.Store) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return st.View(func(txn *store.Txn) error {
		return txn.ScanSessions(func(r store.SessionRecord) {
			s := &session{Session: wire.Session{ID: r.ID}, created: r.Created}
			s.Name, s.Cwd, s.Project, s.Model = r.Name, r.Cwd, r.Project, r.Model
			s.State, s.LastSeen, s.mailed = wire.StateDisconnected, r.LastSeen, r.Mailed
			t.byID[r.ID] = s
			t.deliv.add(r.ID)
		})
	})
}

// records returns what is persisted of every lasting session, connected
// ones seen now.
func (t *sessionTable) records() []store.SessionRecord {
	t.mu.Lock()
	defer t.mu.Unlock()
	var recs []store.SessionRecord
	for _, s := range t.byID {
		if !s.Ephemeral {
			if s.Connected {
				s.LastSeen = time.Now().UTC()
			}
			recs = append(recs, s.record())
		}
	}
	return recs
}

// get returns a copy of session sid.
func (t *sessionTable) get(sid string) (session, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.byID[sid]
	if s == nil {
		return session{}, false
	}
	return *s, true
}

// known reports whether sid is a session.
func (t *sessionTable) known(sid string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byID[sid] != nil
}

// holderOther returns the connection holding session sid if it is not cid
// (0 when there is none).
func (t *sessionTable) holderOther(sid string, cid uint64) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.byID[sid]; sid != "" && s != nil && s.Connected && s.cid != 0 && s.cid != cid {
		return s.cid
	}
	return 0
}

// registration is the outcome of register.
type registration struct {
	row     wire.Session
	rec     store.SessionRecord
	existed bool
}

// register creates or resumes the session req names for connection
// req.ClientID. prevCID is the holder that held it when the caller looked
// (holderOther) and prevOpen whether that connection was still open then.
func (t *sessionTable) register(req wire.RegisterRequest, prevCID uint64, prevOpen bool, now time.Time) (registration, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if req.ClientID != 0 && t.gone.has(req.ClientID) {
		// The connection closed between the caller's check and now: do not
		// mark a session connected to it forever.
		return registration{}, wire.Errorf(wire.CodeBadRequest, "register: connection %d is not open", req.ClientID)
	}
	s, existed := t.byID[req.ID]
	switch {
	case req.ID == "":
		s = nil
	case existed && s.Connected && s.cid != 0 && s.cid != req.ClientID && (s.cid != prevCID || prevOpen):
		if req.Resume || req.Exact {
			return registration{}, wire.Errorf(wire.CodeHeld, "session %s (%s) is held by another running holder; stop that holder first", req.ID, s.Name)
		}
		s, existed = nil, false
		req.ID = ""
	case !existed && req.Resume:
		return registration{}, wire.Errorf(wire.CodeNotFound, "no session with id %q to resume", req.ID)
	}
	if s == nil {
		id := req.ID
		if id == "" {
			id = presence.NewID()
		}
		s = &session{Session: wire.Session{ID: id}, created: now}
		existed = false
		t.deliv.remove(id) // a fresh session starts with an empty box
		t.deliv.add(id)
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
	s.applyState()
	s.Connected, s.LastSeen, s.boundary = true, now, now
	t.asks.targetBack(s.ID) // the asks to it that waited for its resume
	if s.cid != 0 && s.cid != req.ClientID {
		t.unmapCIDLocked(s.cid, s.ID)
	}
	s.cid = req.ClientID
	t.deliv.attach(s.ID, req.Holder, req.HolderToken, s.State == wire.StateIdle, req.Supervisor, req.Batches)
	if req.ClientID != 0 {
		if t.byCID[req.ClientID] == nil {
			t.byCID[req.ClientID] = map[string]bool{}
		}
		t.byCID[req.ClientID][s.ID] = true
	}
	t.byID[s.ID] = s
	t.changed() // names or the set of sessions changed
	return registration{row: t.viewLocked(s, s.ID), rec: s.record(), existed: existed}, nil
}

// detached is a session that lost its connection; the caller persists its
// record, or drops the inbox of an ephemeral one, outside the lock.
type detached struct {
	id, name  string
	ephemeral bool
	rec       store.SessionRecord
}

// detachLocked marks s disconnected (or removes it if ephemeral) and retires
// its own asks; the asks to it wait for it to resume (asks_resume.go),
// unless it is ephemeral and so ends here.
func (t *sessionTable) detachLocked(s *session) detached {
	s.Connected, s.cid = false, 0
	s.State, s.AcceptsAsks = wire.StateDisconnected, false
	s.LastSeen = time.Now().UTC()
	t.deliv.detach(s.ID)
	if s.Ephemeral {
		t.asks.retireOf(s.ID)
		delete(t.byID, s.ID)
		t.deliv.remove(s.ID)
		t.changed()
	} else {
		t.asks.detachedOf(s.ID)
	}
	return detached{id: s.ID, name: s.Name, ephemeral: s.Ephemeral, rec: s.record()}
}

// connClosed detaches the sessions connection cid held and remembers it
// closed.
func (t *sessionTable) connClosed(cid uint64) []detached {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.gone.add(cid, time.Now())
	var out []detached
	for sid := range t.byCID[cid] {
		if s := t.byID[sid]; s != nil && s.cid == cid {
			out = append(out, t.detachLocked(s))
		}
	}
	delete(t.byCID, cid)
	return out
}

// unregister detaches session sid; nil when it was not connected.
func (t *sessionTable) unregister(sid string) (*detached, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.byID[sid]
	if s == nil {
		return nil, wire.Errorf(wire.CodeNotFound, "no session with id %q", sid)
	}
	if !s.Connected {
		return nil, nil
	}
	t.unmapCIDLocked(s.cid, s.ID)
	d := t.detachLocked(s)
	return &d, nil
}

// unmapCIDLocked forgets that connection cid holds session sid.
func (t *sessionTable) unmapCIDLocked(cid uint64, sid string) {
	if m := t.byCID[cid]; m != nil {
		delete(m, sid)
		if len(m) == 0 {
			delete(t.byCID, cid)
		}
	}
}

// setState applies a lifecycle report of a connected session; it reports
// whether the session just became idle.
func (t *sessionTable) setState(req wire.StateRequest) (wire.Session, bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.byID[req.SessionID]
	if s == nil {
		return wire.Session{}, false, wire.Errorf(wire.CodeNotFound, "no session with id %q", req.SessionID)
	}
	if !s.Connected {
		return wire.Session{}, false, wire.Errorf(wire.CodePeerOffline, "session %s (%s) is not connected; attach it first", s.Name, s.ID)
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
	s.applyState()
	s.LastSeen = time.Now().UTC()
	s.boundary = s.LastSeen
	nowIdle := s.State == wire.StateIdle
	t.deliv.setIdle(s.ID, nowIdle)
	return t.viewLocked(s, s.ID), nowIdle && !wasIdle, nil
}

// touch records intercom activity of session sid at now.
func (t *sessionTable) touch(sid string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.byID[sid]; s != nil {
		s.LastIntercomActivity = &now
	}
}

// stored records a message from sender to target just stored at now and,
// for an ask, registers a (timing out after timeout) in the same step: a
// target that went away while the send was committed started no resume
// grace for it yet, so it starts now. It reports whether the target is
// still known and connected.
func (t *sessionTable) stored(sender, target string, now time.Time, a *ask, timeout time.Duration) (known, connected bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.byID[sender]; s != nil {
		s.LastIntercomActivity = &now
	}
	to := t.byID[target]
	if to == nil { // forgotten meanwhile
		return false, false
	}
	to.LastIntercomActivity = &now
	to.mailed = true
	if a != nil {
		t.asks.add(a, timeout)
		if !to.Connected {
			t.asks.targetAway(to.ID)
		}
	}
	return true, to.Connected
}

// forget removes disconnected session sid from memory: its asks, its name
// and its box. The caller drops its store and its replace-mode entries.
func (t *sessionTable) forget(sid string) (session, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.byID[sid]
	if s == nil {
		return session{}, wire.Errorf(wire.CodeNotFound, "no session with id %q", sid)
	}
	if s.Connected {
		return session{}, wire.Errorf(wire.CodeBadRequest, "session %s (%s) is connected; detach it before forgetting it", s.Name, s.ID)
	}
	t.forgetLocked(s)
	return *s, nil
}

func (t *sessionTable) forgetLocked(s *session) {
	t.asks.retireOf(s.ID)
	delete(t.byID, s.ID)
	t.deliv.remove(s.ID)
	t.changed()
}

// counts reports the sessions known and connected (stats).
func (t *sessionTable) counts() (known, connected int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.byID {
		if s.Connected {
			connected++
		}
	}
	return len(t.byID), connected
}
