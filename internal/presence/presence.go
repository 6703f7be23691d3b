// Package presence holds the rules for session identity: ids and aliases,
// status-to-state derivation, display targets and target resolution. What
// a name, an id or a status may be is part of the wire contract
// (wire.ValidateName, wire.ValidID, wire.ValidateStatus).
package presence

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// Errors callers branch on.
var (
	ErrNotFound  = errors.New("no such session")
	ErrAmbiguous = errors.New("ambiguous target")
	ErrSelf      = errors.New("cannot message the current session")
	ErrShort     = errors.New("id prefix too short")
)

// MinPrefix is the shortest id prefix accepted as a target.
const MinPrefix = 8

// NewID returns a random 32-hex-digit session id.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Alias is the name given to an unnamed session.
func Alias(id string) string {
	if len(id) > 8 {
		id = id[:8]
	}
	return "session-" + strings.ToLower(id)
}

// DeriveState maps accepts_asks and status to idle, busy or unknown.
func DeriveState(status string, acceptsAsks *bool) string {
	if acceptsAsks != nil {
		if *acceptsAsks {
			return wire.StateIdle
		}
		return wire.StateBusy
	}
	switch {
	case strings.HasPrefix(status, "idle"):
		return wire.StateIdle
	case strings.HasPrefix(status, "thinking"), strings.HasPrefix(status, "tool:"):
		return wire.StateBusy
	}
	return wire.StateUnknown
}

// AssignTargets sets Target on every session: the name when it is unique
// (case-insensitively) and is not a prefix of another session's id, else the
// shortest id prefix of at least MinPrefix characters that matches one id
// and equals no name, else the full id. It runs in O(N log N).
func AssignTargets(all []*wire.Session) {
	names := make(map[string]int, len(all))
	ids := make([]string, len(all))
	for i, s := range all {
		names[strings.ToLower(s.Name)]++
		ids[i] = strings.ToLower(s.ID)
	}
	sort.Strings(ids)
	// withPrefix counts the ids that start with p.
	withPrefix := func(p string) int {
		return sort.SearchStrings(ids, p+"\xff") - sort.SearchStrings(ids, p)
	}
	for _, s := range all {
		ln, lid := strings.ToLower(s.Name), strings.ToLower(s.ID)
		others := 0
		if len(ln) >= MinPrefix {
			others = withPrefix(ln)
			if strings.HasPrefix(lid, ln) {
				others--
			}
		}
		if names[ln] == 1 && others == 0 {
			s.Target = s.Name
			continue
		}
		s.Target = s.ID
		for n := MinPrefix; n < len(s.ID); n++ {
			p := lid[:n]
			if names[p] == 0 && withPrefix(p) == 1 {
				s.Target = s.ID[:n]
				break
			}
		}
	}
}

// AmbiguousError lists the candidates of an ambiguous target.
type AmbiguousError struct {
	Target  string
	Choices []string // copyable targets
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("ambiguous target %q matches %d sessions; use one of: %s", e.Target, len(e.Choices), strings.Join(e.Choices, ", "))
}

func (e *AmbiguousError) Unwrap() error { return ErrAmbiguous }

// Resolve finds the session named by target among connected sessions first,
// then among disconnected ones. Targets must already be assigned.
func Resolve(all []*wire.Session, target, self string) (*wire.Session, error) {
	target = strings.TrimSpace(target)
	if target == "" {
		return nil, fmt.Errorf("%w: empty target", ErrNotFound)
	}
	var live, gone []*wire.Session
	for _, s := range all {
		if s.Connected {
			live = append(live, s)
		} else {
			gone = append(gone, s)
		}
	}
	s, err := resolveIn(live, target)
	if errors.Is(err, ErrNotFound) {
		s, err = resolveIn(gone, target)
	}
	if err != nil {
		return nil, err
	}
	if s.ID == self && self != "" {
		return nil, fmt.Errorf("%w (%s)", ErrSelf, target)
	}
	return s, nil
}

func resolveIn(set []*wire.Session, target string) (*wire.Session, error) {
	for _, s := range set {
		if s.ID == target {
			return s, nil
		}
	}
	lt := strings.ToLower(target)
	var matches []*wire.Session
	shortPrefix := false
	for _, s := range set {
		switch {
		case strings.ToLower(s.Name) == lt:
			matches = append(matches, s)
		case strings.HasPrefix(strings.ToLower(s.ID), lt):
			if len(target) >= MinPrefix {
				matches = append(matches, s)
			} else {
				shortPrefix = true
			}
		}
	}
	switch len(matches) {
	case 0:
		if shortPrefix {
			return nil, fmt.Errorf("%w: %q is shorter than %d characters; use a longer id prefix or the name", ErrShort, target, MinPrefix)
		}
		return nil, fmt.Errorf("%w: %q", ErrNotFound, target)
	case 1:
		return matches[0], nil
	}
	choices := make([]string, 0, len(matches))
	for _, m := range matches {
		t := m.Target
		if t == "" || strings.EqualFold(t, target) {
			t = m.ID
		}
		choices = append(choices, fmt.Sprintf("%s (%s, %s)", t, m.Name, m.Cwd))
	}
	sort.Strings(choices)
	return nil, &AmbiguousError{Target: target, Choices: choices}
}
