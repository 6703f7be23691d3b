package intercom

// The reply workflow: a session's pending asks, the one a reply answers,
// and the send that answers it. The command line, the MCP tool and the
// terminal UI all reply through here.

import (
	"context"
	"errors"
	"strings"

	"github.com/intercom-dev/intercom/internal/presence"
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

// Choices lists the candidates, "ASK_ID (from NAME), …", each name passed
// through safe: a remote peer chooses it, so what prints it makes it safe
// to print (render.Line).
func (e *AmbiguousAskError) Choices(safe func(string) string) string {
	ids := make([]string, 0, len(e.Asks))
	for _, a := range e.Asks {
		ids = append(ids, a.AskID+" (from "+safe(a.From.Name)+")")
	}
	return strings.Join(ids, ", ")
}

// Error lists the candidates as they are; the command lines' error report
// escapes what it prints.
func (e *AmbiguousAskError) Error() string {
	return "Multiple pending asks: " + e.Choices(func(s string) string { return s })
}

// PickAsk chooses the pending ask a reply answers. With no target it is the
// only one; a target names one by its ask id, its sender's name (any case)
// or display target, or a prefix of at least presence.MinPrefix characters
// of its sender's session id. None is ErrNoAsk; several an
// *AmbiguousAskError.
func PickAsk(asks []wire.PendingAsk, target string) (wire.PendingAsk, error) {
	var match []wire.PendingAsk
	for _, a := range asks {
		if target == "" || a.AskID == target || strings.EqualFold(a.From.Name, target) || a.FromTarget == target ||
			(len(target) >= presence.MinPrefix && strings.HasPrefix(a.From.ID, target)) {
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

// ReplyRequest is the send that answers ask askID of session to.
func ReplyRequest(self, to, askID, text string, att []wire.Attachment) wire.SendRequest {
	return wire.SendRequest{From: self, To: to, Text: text, ReplyTo: askID, Attachments: att}
}

// Reply answers one of self's pending asks, the one PickAsk picks for
// target, and returns it with the reply's receipt. The errors are
// PickAsk's, the listing's and the send's.
func (c *Client) Reply(ctx context.Context, self, target, text string, att []wire.Attachment) (wire.PendingAsk, wire.SendReply, error) {
	asks, err := c.Pending(ctx, self)
	if err != nil {
		return wire.PendingAsk{}, wire.SendReply{}, err
	}
	a, err := PickAsk(asks, target)
	if err != nil {
		return wire.PendingAsk{}, wire.SendReply{}, err
	}
	res, err := c.Send(ctx, ReplyRequest(self, a.From.ID, a.AskID, text, att))
	return a, res, err
}
