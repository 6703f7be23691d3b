package wire

import "time"

// Inbound holds: a session whose config says `inbound: hold` keeps the
// messages of senders it does not accept until a person approves or
// refuses each one; `refuse` turns them away at send.

// Subjects of the held list and of a person's decision.
const (
	SubjHeld       = SubjectPrefix + "held"
	SubjHeldDecide = SubjectPrefix + "helddecide"
)

// Inbound modes (config `inbound`).
const (
	InboundAccept = "accept"
	InboundHold   = "hold"
	InboundRefuse = "refuse"
)

// Decisions on a held message, and the trace states of one.
const (
	DecisionApproved = "approved"
	DecisionRefused  = "refused"
	TraceHeld        = "held"
	TraceRefused     = "refused"
)

// CodeRefused: the recipient refuses messages from this sender (config
// `inbound`), or a person refused it.
const CodeRefused = "refused"

// HeldMessage is one message waiting for a person's decision.
type HeldMessage struct {
	Message  Message   `json:"message"`
	ToName   string    `json:"to_name"`
	HeldAt   time.Time `json:"held_at"`
	Decision string    `json:"decision,omitempty"` // set once decided
}

// HeldRequest lists held messages: those to Session (an id), or all.
type HeldRequest struct {
	Session string `json:"session,omitempty"`
}

// HeldReply answers HeldRequest, oldest first.
type HeldReply struct {
	Held []HeldMessage `json:"held"`
}

// HeldDecideRequest approves or refuses a held message. By is the deciding
// session: only a person's session may decide.
type HeldDecideRequest struct {
	ID      string `json:"id"`
	By      string `json:"by"`
	Approve bool   `json:"approve"`
}

// HeldDecideReply reports the outcome: Decision, and for an approved
// message its delivery state (the trace state once stored).
type HeldDecideReply struct {
	ID       string `json:"id"`
	To       string `json:"to"`
	Decision string `json:"decision"`
}
