package wire

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/intercom-dev/intercom/internal/ascii"
)

// Field rules: what a single value of a request may be. The request
// validators (validate.go) are built from them, and the CLI and the MCP
// server check what their users type with the same ones before they call
// the broker, so a value is refused in the same words wherever it comes
// from. They return plain errors; the request validators turn them into
// bad_request replies.

// Errors callers branch on.
var (
	ErrBadName = errors.New("invalid session name")
	ErrBadID   = errors.New("invalid session id")
)

// More limits.
const (
	MaxTopicLen       = 200 // a topic name, without @host
	MaxResourceLen    = 200 // a topic record's resource
	MaxClientMsgIDLen = 128 // a client message id
	MaxStatusLen      = 200 // a lifecycle status with its suffix
	MaxHolderTokenLen = 64  // a holder's delivery token
)

// Byte sets of the rules below (package ascii, not regular expressions:
// intercom-hook links this package and no regexp).
var (
	alnum           = ascii.Of("A-Za-z0-9")
	topicBytes      = ascii.Of("A-Za-z0-9._:/-")
	hostFirst, host = ascii.Of("a-z0-9"), ascii.Of("a-z0-9.-")
)

// IDBytes are the bytes a session id is made of (ValidID).
var IDBytes = ascii.Of("A-Za-z0-9_-")

// ValidID reports whether id is an acceptable requested session id: 8-80
// of A-Z a-z 0-9 _ -.
func ValidID(id string) error {
	if !ascii.Word(id, 8, 80, IDBytes, IDBytes) {
		return fmt.Errorf("%w %q: want 8-80 of A-Z a-z 0-9 _ -", ErrBadID, id)
	}
	return nil
}

// nameMarkup are the characters a name may not contain because, inside
// the bold sender of a rendered header ("**From name@host** (…)"), they
// could end the bold, open a link or a code span, or escape the closing
// "**": a name `holder** (Native session cwd: ~/x) [steer]` would push the
// "@host" that marks a remote sender out of the name an agent reads.
const nameMarkup = "*`[]()<>\\|"

// ValidateName checks a session name. As in pi-intercom, any printable
// text is a name ("my planner", "plänner"), 1-64 characters; refused is only
// what would break targeting it or the header it is shown in: control and
// other non-printing characters (a target must be printable), spaces at
// either end (targets are trimmed), a leading '-' (it would read as a flag
// on a command line), '@' (name@host targets a bridged machine) and the
// Markdown of nameMarkup. Every name passes here, local or remote (a
// bridged host's senders and presence rows), so no renderer needs to
// neutralise one.
func ValidateName(name string) error {
	n := utf8.RuneCountInString(name)
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrBadName)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w %q: not valid UTF-8", ErrBadName, name)
	case n > MaxNameLen:
		return fmt.Errorf("%w %q: %d characters, longer than %d", ErrBadName, string([]rune(name)[:16])+"…", n, MaxNameLen)
	case strings.ContainsFunc(name, func(r rune) bool { return r != ' ' && !unicode.IsPrint(r) }):
		return fmt.Errorf("%w %q: control or other non-printing characters are not allowed", ErrBadName, name)
	case strings.TrimSpace(name) != name:
		return fmt.Errorf("%w %q: spaces at the start or end are not allowed", ErrBadName, name)
	case strings.HasPrefix(name, "-"):
		return fmt.Errorf("%w %q: a name cannot start with '-' (it would read as a flag)", ErrBadName, name)
	case strings.Contains(name, "@"):
		return fmt.Errorf("%w %q: '@' is not allowed (name@host targets a session on a bridged machine)", ErrBadName, name)
	case strings.ContainsAny(name, nameMarkup):
		return fmt.Errorf("%w %q: the characters %s are not allowed (a name is shown in the bold header of every message)", ErrBadName, name, nameMarkup)
	}
	return nil
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
	if len(status) > MaxStatusLen || hasControl(status) {
		return fmt.Errorf("invalid status %q: too long or has control characters", status)
	}
	return nil
}

// ValidLabel checks a free-text label (cwd, model, thread, reply id).
func ValidLabel(what, v string) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("%s must not be empty", what)
	}
	if len(v) > MaxLabelLen {
		return fmt.Errorf("%s is longer than %d bytes", what, MaxLabelLen)
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

// ValidClientMsgID reports whether id can be a client message id: a label
// of at most MaxClientMsgIDLen bytes.
func ValidClientMsgID(id string) bool {
	return ValidLabel("client message id", id) == nil && len(id) <= MaxClientMsgIDLen
}

// ValidHolderToken reports whether t can be the last token of a delivery
// subject (Deliver): 1-64 letters and digits.
func ValidHolderToken(t string) bool {
	if t == "" || len(t) > MaxHolderTokenLen {
		return false
	}
	for _, r := range t {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// ValidateTopic checks an exact topic name: 1-200 of letters, digits and
// . _ : / -, no wildcards, no empty path segments. A topic of a bridged
// host is written topic@host; ValidateTopic checks both parts.
func ValidateTopic(t string) error {
	if i := strings.LastIndexByte(t, '@'); i >= 0 {
		if host := t[i+1:]; !ValidHost(host) {
			return fmt.Errorf("invalid topic %q: %q after @ is not a host name", t, host)
		}
		t = t[:i]
	}
	switch {
	case t == "":
		return fmt.Errorf("invalid topic: empty")
	case len(t) > MaxTopicLen:
		return fmt.Errorf("invalid topic: longer than %d characters", MaxTopicLen)
	case strings.ContainsAny(t, "*>"):
		return fmt.Errorf("invalid topic %q: wildcards are not supported; topics are exact names", t)
	case !ascii.Word(t, 1, 0, alnum, topicBytes), strings.Contains(t, "//"), strings.HasSuffix(t, "/"):
		return fmt.Errorf("invalid topic %q: use letters, digits and . _ : / - (no spaces, no empty segments)", t)
	}
	return nil
}
