// Package presence holds the rules for session identity: ids, names and
// aliases, status-to-state derivation, display targets and target
// resolution.
package presence

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// Errors callers branch on.
var (
	ErrBadName   = errors.New("invalid session name")
	ErrBadID     = errors.New("invalid session id")
	ErrNotFound  = errors.New("no such session")
	ErrAmbiguous = errors.New("ambiguous target")
	ErrSelf      = errors.New("cannot message the current session")
	ErrShort     = errors.New("id prefix too short")
)

// MinPrefix is the shortest id prefix accepted as a target.
const MinPrefix = 8

var (
	idRE = regexp.MustCompile(`^[A-Za-z0-9_-]{8,80}$`)
)

// NewID returns a random 32-hex-digit session id.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ValidID reports whether id is an acceptable requested session id.
func ValidID(id string) error {
	if !idRE.MatchString(id) {
		return fmt.Errorf("%w %q: want 8-80 of A-Z a-z 0-9 _ -", ErrBadID, id)
	}
	return nil
}

// ValidateName checks a session name. Like the reference, any printable
// text is a name ("my planner", "plänner"), 1-64 characters; refused is only
// what would break targeting it: control and other non-printing characters
// (a target must be printable), spaces at either end (targets are trimmed),
// a leading '-' (it would read as a flag on a command line) and '@' (name@host
// targets a bridged machine).
func ValidateName(name string) error {
	n := utf8.RuneCountInString(name)
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrBadName)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w %q: not valid UTF-8", ErrBadName, name)
	case n > wire.MaxNameLen:
		return fmt.Errorf("%w %q: %d characters, longer than %d", ErrBadName, string([]rune(name)[:16])+"…", n, wire.MaxNameLen)
	case strings.ContainsFunc(name, func(r rune) bool { return r != ' ' && !unicode.IsPrint(r) }):
		return fmt.Errorf("%w %q: control or other non-printing characters are not allowed", ErrBadName, name)
	case strings.TrimSpace(name) != name:
		return fmt.Errorf("%w %q: spaces at the start or end are not allowed", ErrBadName, name)
	case strings.HasPrefix(name, "-"):
		return fmt.Errorf("%w %q: a name cannot start with '-' (it would read as a flag)", ErrBadName, name)
	case strings.Contains(name, "@"):
		return fmt.Errorf("%w %q: '@' is not allowed (name@host targets a session on a bridged machine)", ErrBadName, name)
	}
	return nil
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

// ValidateStatus checks a lifecycle status: idle, thinking or tool:NAME,
// optionally followed by " · suffix".
func ValidateStatus(status string) error {
	base, _, _ := strings.Cut(status, " · ")
	switch {
	case base == "idle", base == "thinking":
	case strings.HasPrefix(base, "tool:") && len(base) > 5 && !strings.ContainsAny(base, " \t"):
	default:
		return fmt.Errorf("invalid status %q: want idle, thinking or tool:NAME", status)
	}
	if len(status) > 200 || hasControl(status) {
		return fmt.Errorf("invalid status %q: too long or has control characters", status)
	}
	return nil
}

// ValidLabel checks a free-text label (cwd, model, thread, reply id).
func ValidLabel(what, v string) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("%s must not be empty", what)
	}
	if len(v) > wire.MaxLabelLen {
		return fmt.Errorf("%s is longer than %d bytes", what, wire.MaxLabelLen)
	}
	if hasControl(v) {
		return fmt.Errorf("%s must not contain control characters", what)
	}
	return nil
}

// ValidText checks message text: control characters other than tab, LF and
// CR are refused.
func ValidText(what, v string) error {
	for _, r := range v {
		if (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0x7f {
			return fmt.Errorf("%s contains control character %U", what, r)
		}
	}
	return nil
}

func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
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

var topicRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/-]*$`)

const maxTopicLen = 200

// ValidateTopic checks an exact topic name: 1-200 of letters, digits and
// . _ : / -, no wildcards, no empty path segments. A topic of a bridged
// host is written topic@host; ValidateTopic checks both parts.
func ValidateTopic(t string) error {
	if i := strings.LastIndexByte(t, '@'); i >= 0 {
		if host := t[i+1:]; !wire.ValidHost(host) {
			return fmt.Errorf("invalid topic %q: %q after @ is not a host name", t, host)
		}
		t = t[:i]
	}
	switch {
	case t == "":
		return fmt.Errorf("invalid topic: empty")
	case len(t) > maxTopicLen:
		return fmt.Errorf("invalid topic: longer than %d characters", maxTopicLen)
	case strings.ContainsAny(t, "*>"):
		return fmt.Errorf("invalid topic %q: wildcards are not supported; topics are exact names", t)
	case !topicRE.MatchString(t), strings.Contains(t, "//"), strings.HasSuffix(t, "/"):
		return fmt.Errorf("invalid topic %q: use letters, digits and . _ : / - (no spaces, no empty segments)", t)
	}
	return nil
}
