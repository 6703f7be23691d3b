package presence

import (
	"errors"
	"fmt"
	"github.com/intercom-dev/intercom/internal/render"
	"strings"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// ErrNoAsk: no pending ask is there to reply to (or none matches the
// reply's target).
var ErrNoAsk = errors.New("No active intercom context to reply to")

// AmbiguousAskError: several pending asks match a reply; its target must
// pick one.
type AmbiguousAskError struct {
	Asks []wire.PendingAsk
}

// Choices lists the candidates, "ASK_ID (from NAME), …", each name made
// safe to print (a remote peer chooses it).
func (e *AmbiguousAskError) Choices() string {
	ids := make([]string, 0, len(e.Asks))
	for _, a := range e.Asks {
		ids = append(ids, fmt.Sprintf("%s (from %s)", a.AskID, render.Line(a.From.Name)))
	}
	return strings.Join(ids, ", ")
}

func (e *AmbiguousAskError) Error() string { return "Multiple pending asks: " + e.Choices() }

// PickAsk chooses the pending ask a reply answers. With no target it is the
// only one; a target names one by its ask id, its sender's name (any case)
// or display target, or a prefix of at least MinPrefix characters of its
// sender's session id. None is ErrNoAsk; several an *AmbiguousAskError.
func PickAsk(asks []wire.PendingAsk, target string) (wire.PendingAsk, error) {
	var match []wire.PendingAsk
	for _, a := range asks {
		if target == "" || a.AskID == target || strings.EqualFold(a.From.Name, target) || a.FromTarget == target ||
			(len(target) >= MinPrefix && strings.HasPrefix(a.From.ID, target)) {
			match = append(match, a)
		}
	}
	switch len(match) {
	case 0:
		return wire.PendingAsk{}, ErrNoAsk
	case 1:
		return match[0], nil
	}
	return wire.PendingAsk{}, &AmbiguousAskError{Asks: match}
}
