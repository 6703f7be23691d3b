package broker

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/intercom-dev/intercom/internal/presence"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Presence rows: what `list` shows, the display targets, and resolving a
// target to a session.

// viewLocked returns the public row of s with its target and counts.
func (t *sessionTable) viewLocked(s *session, self string) wire.Session {
	r := s.Session
	r.Target = t.targetsLocked()[s.ID]
	r.Self = s.ID == self
	r.PendingAsks = t.asks.countsTo()[s.ID]
	t.markStuckLocked(&r, s, time.Now().UTC())
	r.WakePaused = wakePausedNames(t.deliv.wakePaused()[s.ID], t.targetsLocked())
	return r
}

// markStuckLocked sets the stuck fields of row r of s (stuck.go), except
// for steers that wait because the wake budget or the loop breaker holds
// them for its next boundary: idle on purpose, not stuck.
func (t *sessionTable) markStuckLocked(r *wire.Session, s *session, now time.Time) {
	t.stalls.mark(r, s, now)
	if r.StuckReason == wire.StuckSteers && t.deliv.wakeHolding(s.ID) {
		r.StuckSince, r.StuckSeconds, r.StuckReason = time.Time{}, 0, ""
	}
}

// targetsLocked returns every session's display target; it is recomputed
// only after the set of sessions or their names changed. The map returned
// is never changed afterwards.
func (t *sessionTable) targetsLocked() map[string]string {
	if t.targets != nil {
		return t.targets
	}
	rows := make([]*wire.Session, 0, len(t.byID))
	for _, s := range t.byID {
		rows = append(rows, &wire.Session{ID: s.ID, Name: s.Name})
	}
	presence.AssignTargets(rows)
	t.targets = make(map[string]string, len(rows))
	for _, r := range rows {
		t.targets[r.ID] = r.Target
	}
	return t.targets
}

// targetsNow returns every session's display target.
func (t *sessionTable) targetsNow() map[string]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.targetsLocked()
}

// rowsLocked returns every known session with targets assigned.
func (t *sessionTable) rowsLocked(self string) []*wire.Session {
	rows := make([]*wire.Session, 0, len(t.byID))
	pending := t.asks.countsTo()
	targets := t.targetsLocked()
	paused := t.deliv.wakePaused()
	for _, s := range t.byID {
		r := s.Session
		r.PendingAsks = pending[s.ID]
		r.WakePaused = wakePausedNames(paused[s.ID], targets)
		r.Self = s.ID == self
		r.Target = targets[s.ID]
		rows = append(rows, &r)
	}
	return rows
}

// lookup resolves a target for sender self and returns the row of the
// session it names, as self sees it.
func (t *sessionTable) lookup(target, self string) (wire.Session, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.byID[target]; s != nil && target != self { // an exact id
		return t.viewLocked(s, self), nil
	}
	r, err := presence.Resolve(t.rowsLocked(self), target, self)
	if err != nil {
		var amb *presence.AmbiguousError
		switch {
		case errors.As(err, &amb):
			return wire.Session{}, &wire.Error{Code: wire.CodeAmbiguous, Message: err.Error(), Choices: amb.Choices}
		case errors.Is(err, presence.ErrSelf):
			return wire.Session{}, wire.Errorf(wire.CodeSelf, "Cannot message the current session (%s)", target)
		case errors.Is(err, presence.ErrShort):
			return wire.Session{}, wire.Errorf(wire.CodeBadRequest, "%v", err)
		default:
			return wire.Session{}, wire.Errorf(wire.CodeNotFound, "no session matches %q (see `intercom list --scope all --all`)", target)
		}
	}
	return t.viewLocked(t.byID[r.ID], self), nil
}

// nameOf returns the name of session sid and whether it is connected.
func (t *sessionTable) nameOf(sid string) (name string, connected, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.byID[sid]; s != nil {
		return s.Name, s.Connected, true
	}
	return "", false, false
}

func (b *Broker) list(req wire.ListRequest) (*wire.ListReply, error) {
	if err := wire.ValidateList(&req); err != nil {
		return nil, err
	}
	keep := listFilter{&req}
	out := b.sessions.listed(req.Self, keep)
	if req.Scope == "all" {
		for _, r := range b.routes.rows() {
			if keep.keeps(&r) {
				out = append(out, r)
			}
		}
	}
	if len(out) > 0 {
		counts := b.ledger.queuedCounts()
		for i := range out {
			if out[i].Host == "" { // a remote row keeps what its host reported
				out[i].Queued = counts[out[i].ID]
			}
		}
	}
	if !rowsSorted(out) {
		out = sortRows(out)
		b.sessions.reorder(out) // the next list finds them in order
	}
	b.markPersons(out)
	return &wire.ListReply{Sessions: out}, nil
}

// listFilter says which rows a list request shows.
type listFilter struct{ req *wire.ListRequest }

func (f listFilter) keeps(r *wire.Session) bool {
	switch {
	case f.req.ID != "":
		return r.ID == f.req.ID
	case r.Self:
		return true
	case r.Ephemeral || (!r.Connected && r.State != wire.StateUnreachable && !f.req.IncludeDisconnected):
		return false
	}
	return f.req.Scope != "project" || f.req.Project == "" || r.Project == f.req.Project || r.Host != ""
}

// rowOrder compares two rows of a list: self first, then connected ones,
// by name (case folded), then id.
func rowOrder(a, b *listKey) int {
	switch {
	case a.self != b.self:
		return boolFirst(a.self)
	case a.connected != b.connected:
		return boolFirst(a.connected)
	case a.name != b.name:
		return strings.Compare(a.name, b.name)
	}
	return strings.Compare(a.id, b.id)
}

type listKey struct {
	self, connected bool
	name, id        string
}

func keyOf(r *wire.Session) listKey {
	return listKey{r.Self, r.Connected, strings.ToLower(r.Name), r.ID}
}

// rowsSorted reports whether rows are in list order already.
func rowsSorted(rows []wire.Session) bool {
	for i := 1; i < len(rows); i++ {
		a, b := keyOf(&rows[i-1]), keyOf(&rows[i])
		if rowOrder(&a, &b) > 0 {
			return false
		}
	}
	return true
}

// sortRows returns rows in list order. It sorts indices: moving a row is
// moving 200 bytes.
func sortRows(rows []wire.Session) []wire.Session {
	keys := make([]listKey, len(rows))
	order := make([]int32, len(rows))
	for i := range rows {
		keys[i] = keyOf(&rows[i])
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(i, j int32) int { return rowOrder(&keys[i], &keys[j]) })
	sorted := make([]wire.Session, len(rows))
	for i, k := range order {
		sorted[i] = rows[k]
	}
	return sorted
}

// changed forgets what is derived from the set of sessions and their
// names: the targets and the list order.
func (t *sessionTable) changed() {
	t.targets, t.order, t.index = nil, nil, nil
}

// listed returns the rows of the sessions keep takes, as self sees them,
// in the order of the last list (sorted again by the caller if that no
// longer holds: a session connected or went since).
func (t *sessionTable) listed(self string, keep listFilter) []wire.Session {
	t.mu.Lock()
	defer t.mu.Unlock()
	pending := t.asks.countsTo()
	targets := t.targetsLocked()
	candidates := t.order
	if id := keep.req.ID; id != "" { // one row: no need to walk them all
		candidates = nil
		if s := t.byID[id]; s != nil {
			candidates = []*session{s}
		}
	} else if t.order == nil {
		t.order = make([]*session, 0, len(t.byID))
		for _, s := range t.byID {
			t.order = append(t.order, s)
		}
		candidates = t.order
	}
	paused := t.deliv.wakePaused()
	out := make([]wire.Session, 0, len(candidates))
	now := time.Now().UTC()
	for _, s := range candidates {
		r := s.Session
		r.PendingAsks = pending[s.ID]
		r.Self = s.ID == self
		r.Target = targets[s.ID]
		r.WakePaused = wakePausedNames(paused[s.ID], targets)
		if keep.keeps(&r) {
			t.markStuckLocked(&r, s, now)
			out = append(out, r)
		}
	}
	return out
}

// reorder keeps the order of rows (sorted) for the next list: their
// sessions first, then the ones not listed.
func (t *sessionTable) reorder(rows []wire.Session) {
	t.mu.Lock()
	defer t.mu.Unlock()
	order := make([]*session, 0, len(t.byID))
	in := make(map[*session]bool, len(rows))
	for i := range rows {
		if s := t.byID[rows[i].ID]; s != nil && rows[i].Host == "" && !in[s] {
			order = append(order, s)
			in[s] = true
		}
	}
	for _, s := range t.byID {
		if !in[s] {
			order = append(order, s)
		}
	}
	t.order = order
}

// boolFirst orders the row whose flag is set first.
func boolFirst(set bool) int {
	if set {
		return -1
	}
	return 1
}
