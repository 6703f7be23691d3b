package broker

import (
	"sort"
	"strings"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// The target index: a send names its recipient by name (or id, or id
// prefix), and resolving that by walking every session (lookup,
// presence.Resolve) is the cost of a send once there are many. The index
// answers the common case, a name that one session has and no id starts
// with, from two in-memory tables; anything else (ambiguous, a prefix, the
// sender itself, an unknown target) goes the full way, so the answer is
// always Resolve's. It is rebuilt after the set of sessions or their names
// change (with the display targets).

// targetIndex maps lower-cased names to session ids and keeps the
// lower-cased ids sorted for a prefix search.
type targetIndex struct {
	byName map[string][]string
	ids    []string
}

// indexLocked returns the target index, built if the sessions changed.
func (t *sessionTable) indexLocked() *targetIndex {
	if t.index != nil {
		return t.index
	}
	ix := &targetIndex{byName: make(map[string][]string, len(t.byID)), ids: make([]string, 0, len(t.byID))}
	for id, s := range t.byID {
		ln := strings.ToLower(s.Name)
		ix.byName[ln] = append(ix.byName[ln], id)
		ix.ids = append(ix.ids, strings.ToLower(id))
	}
	sort.Strings(ix.ids)
	t.index = ix
	return ix
}

// uniqueLocked returns the session target names for sender self when the
// index decides it alone: an exact id other than self's, or a name exactly
// one session has, not self's, that is no prefix of any id. Otherwise nil.
func (t *sessionTable) uniqueLocked(target, self string) *session {
	if s := t.byID[target]; s != nil && target != self {
		return s
	}
	if target == "" || strings.TrimSpace(target) != target {
		return nil
	}
	ix := t.indexLocked()
	lt := strings.ToLower(target)
	named := ix.byName[lt]
	if len(named) != 1 || named[0] == self {
		return nil
	}
	if i := sort.SearchStrings(ix.ids, lt); i < len(ix.ids) && strings.HasPrefix(ix.ids[i], lt) {
		return nil // an id prefix too: ambiguous, or too short to say
	}
	return t.byID[named[0]]
}

// find resolves a send's target for sender self, as lookup does, through
// the index when it can.
func (t *sessionTable) find(target, self string) (wire.Session, error) {
	t.mu.Lock()
	if s := t.uniqueLocked(target, self); s != nil {
		row := t.viewLocked(s, self)
		t.mu.Unlock()
		return row, nil
	}
	t.mu.Unlock()
	return t.lookup(target, self)
}
