package render

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// Ranks of a digest, most urgent first (Rank).
const (
	RankPerson     = iota // sent by a person (wire.Message.FromPerson)
	RankSupervisor        // sent by the reader's supervisor (agent-runs)
	RankAsk               // an ask awaiting the reader's reply
	RankTopic             // a blocker or decision on a topic
	RankRest              // everything else, in arrival order
)

// DigestRoom is what a digest keeps free of its budget for its head line
// and its "more wait" line.
const DigestRoom = 300

// Rank is m's place in a digest (Rank*): from a person, from supervisor
// (the reader's supervisor session, by id or name; "" for none), an ask,
// a blocker or decision, the rest.
func Rank(m wire.Message, supervisor string) int {
	switch {
	case m.FromPerson:
		return RankPerson
	case supervisor != "" && (m.From.ID == supervisor || m.From.Name == supervisor):
		return RankSupervisor
	case m.ExpectsReply:
		return RankAsk
	case m.Topic != "" && (m.Event == wire.EventBlocker || m.Event == wire.EventDecision):
		return RankTopic
	}
	return RankRest
}

// Order returns msgs (in arrival order) sorted by Rank, arrival order kept
// within a rank.
func Order(msgs []wire.Message, supervisor string) []wire.Message {
	out := slices.Clone(msgs)
	slices.SortStableFunc(out, func(a, b wire.Message) int {
		return cmp.Compare(Rank(a, supervisor), Rank(b, supervisor))
	})
	return out
}

// DigestOptions shape a digest.
type DigestOptions struct {
	Render     func(wire.Message) string // one message as the model reads it (ForAgent)
	Budget     int                       // bytes of the whole digest
	Supervisor string                    // the reader's supervisor session ("" for none)
}

// Digest is what one boundary hands the model.
type Digest struct {
	Text string
	// Shown lists the messages rendered whole in Text, in digest order:
	// the only ones that may be acknowledged once Text is handed over.
	Shown []string
	// Waiting counts the messages left for a later boundary (Text says so).
	Waiting int
	// Oversize is set when the most urgent message alone is bigger than the
	// budget: Text is empty, and the caller hands it over in parts.
	Oversize *wire.Message
}

// BuildDigest renders every message waiting at one boundary (msgs, in
// arrival order) as one digest: a head line, then the messages by Rank,
// each whole, as many as fit in the budget; the rest stay queued and the
// digest's last line says how many wait. A message that does not fit ends
// the digest, so no later, less urgent one jumps ahead of it.
func BuildDigest(msgs []wire.Message, o DigestOptions) Digest {
	if len(msgs) == 0 {
		return Digest{}
	}
	ordered := Order(msgs, o.Supervisor)
	var b strings.Builder
	fmt.Fprintf(&b, "intercom: %d new message(s) for this session%s.\n", len(msgs), orderNote(ordered, o.Supervisor))
	var shown []string
	for i := range ordered {
		text := o.Render(ordered[i])
		if b.Len()+len(text)+DigestRoom > o.Budget {
			if len(shown) == 0 {
				return Digest{Oversize: &ordered[i], Waiting: len(msgs) - 1}
			}
			break
		}
		b.WriteString(text)
		shown = append(shown, ordered[i].ID)
	}
	rest := len(msgs) - len(shown)
	b.WriteString(WaitingLine(rest))
	return Digest{Text: b.String(), Shown: shown, Waiting: rest}
}

// orderNote tells the reader the digest is not in arrival order, when it
// is not.
func orderNote(ordered []wire.Message, supervisor string) string {
	if len(ordered) < 2 || Rank(ordered[0], supervisor) == Rank(ordered[len(ordered)-1], supervisor) {
		return ""
	}
	return " (most urgent first: from a person, from your supervisor, asks, blockers and decisions, then the rest)"
}

// WaitingLine is the digest's last line when n messages wait for a later
// boundary ("" for none).
func WaitingLine(n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf("\n%d more messages wait for this session: they come at the next boundary (or run `intercom inbox` to read them now).\n", n)
}

// WakeHeldNote says why a steer did not wake its idle reader (why is
// wire.SendReply.WakeHeld; reader is the session it was sent to), for its
// sender; "" when it woke it.
func WakeHeldNote(why, reader string) string {
	switch why {
	case wire.WakeHeldBudget:
		return fmt.Sprintf("intercom: this did not wake %s: peers woke it as often as the wake budget allows (config wakeBudget per wakeWindowMs); it reaches %s at its next boundary", Line(reader), Line(reader))
	case wire.WakeHeldLoop:
		return loopNote(reader)
	}
	return ""
}

// wakeHeldReaderNote is WakeHeldNote for the reader of message m.
func wakeHeldReaderNote(m wire.Message) string {
	switch m.WakeHeld {
	case wire.WakeHeldBudget:
		return "intercom: this message did not wake you: peers woke you as often as the wake budget allows (config wakeBudget per wakeWindowMs)"
	case wire.WakeHeldLoop:
		return loopNote(m.From.Name)
	}
	return ""
}

func loopNote(peer string) string {
	return fmt.Sprintf("intercom: wake-ups between you and %s are paused: you woke each other back and forth with no person involved (config wakeLoopRounds); messages still arrive at the next boundary, and a person's message resumes the wake-ups", Line(peer))
}
