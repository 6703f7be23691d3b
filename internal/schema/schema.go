// Package schema is the --json contract of intercom's command lines: the Go
// type of every JSON output and of the error envelope, and the JSON Schemas
// generated from those types into docs/schemas/ (Outputs lists them; a field
// without omitempty is required, so a field documented as always present is
// always present). Commands print these types and nothing else.
package schema

import (
	"time"

	"github.com/intercom-dev/intercom/internal/runs"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Message is a delivered message as attach, inbox and wait print it.
type Message struct {
	Event        string            `json:"event"` // message, or the topic event of a topic wake-up
	ID           string            `json:"id"`
	Seq          uint64            `json:"seq"`
	From         wire.Peer         `json:"from"`
	Text         string            `json:"text"`
	Delivery     string            `json:"delivery"`
	ExpectsReply bool              `json:"expects_reply"`
	ReplyTo      string            `json:"reply_to,omitempty"`
	Thread       string            `json:"thread,omitempty"`
	Attachments  []wire.Attachment `json:"attachments"`
	SentAt       time.Time         `json:"sent_at"`
	Topic        string            `json:"topic,omitempty"`
	Resource     string            `json:"resource,omitempty"`
	Ownership    string            `json:"ownership,omitempty"`
	// WakeHeld: this steer does not wake its idle reader (the broker's wake
	// budget or loop breaker: wake_budget, wake_loop); it waits for the
	// reader's next boundary.
	WakeHeld string `json:"wake_held,omitempty"`
	// FromPerson: a person sent it (wire.Message.FromPerson, set by the broker).
	FromPerson bool `json:"from_person,omitempty"`
	// Rendered is the message as an agent's model is shown it (sender,
	// reply hint, body, attachments): attach --control only.
	Rendered string `json:"rendered,omitempty"`
}

// Attached is the first line of attach --json.
type Attached struct {
	Event   string `json:"event"` // attached
	ID      string `json:"id"`
	Name    string `json:"name"`
	Target  string `json:"target"`
	Cwd     string `json:"cwd"`
	Project string `json:"project"`
	Resumed bool   `json:"resumed"`
}

// Reconnected is the attach --json line after the broker came back.
type Reconnected struct {
	Event string `json:"event"` // reconnected
	ID    string `json:"id"`
	Name  string `json:"name"`
}

// Messages is inbox --json and wait --json.
type Messages struct {
	Messages []Message `json:"messages"`
}

// Digest is digest --json: one boundary's digest of the messages given,
// the ids of those it shows (the only ones to acknowledge once it is handed
// over) and how many wait for a later boundary.
type Digest struct {
	Text    string   `json:"text"`
	Shown   []string `json:"shown"`
	Waiting int      `json:"waiting"`
}

// Wait is wait --json: the messages that woke it. HeldElsewhere is true when
// another holder (attach, hold) took them and wait shows a copy.
type Wait struct {
	Messages      []Message `json:"messages"`
	HeldElsewhere bool      `json:"held_elsewhere"`
}

// Status is status --json.
type Status struct {
	Connected      bool           `json:"connected"`
	SessionID      string         `json:"session_id"` // "" without --session
	Session        *wire.Session  `json:"session"`    // null without --session
	ActiveSessions int            `json:"active_sessions"`
	QueuedInbound  int            `json:"queued_inbound"`
	Socket         string         `json:"socket"`
	Home           string         `json:"home"`
	Sessions       []wire.Session `json:"sessions"`
}

// Ask is ask --json. OK reports the outcome; on success Reply is set, on
// failure Reason and Error. AskID is set whenever the question was sent
// (not for peer_offline and ask_in_progress, which refuse it first).
type Ask struct {
	OK     bool     `json:"ok"`
	AskID  string   `json:"ask_id,omitempty"`
	To     string   `json:"to"` // the target shown by list, or as given when unresolved
	Reply  *Message `json:"reply,omitempty"`
	Reason string   `json:"reason,omitempty"` // timeout, peer_disconnected, asker_disconnected, peer_busy, peer_offline, ask_in_progress
	Error  string   `json:"error,omitempty"`
}

// Reply is reply --json.
type Reply struct {
	ID      string       `json:"id"`
	ReplyTo string       `json:"reply_to"`
	To      wire.Session `json:"to"`
}

// PendingAsk is one row of pending --json.
type PendingAsk struct {
	wire.PendingAsk
	AgeSeconds   int    `json:"age_seconds"`
	ReplyCommand string `json:"reply_command"`
}

// Pending is pending --json.
type Pending struct {
	Asks []PendingAsk `json:"asks"`
}

// Forgot is forget --json.
type Forgot struct {
	Forgotten string `json:"forgotten"` // session id
	Name      string `json:"name"`
}

// Unsubscribed is unsubscribe --json.
type Unsubscribed struct {
	Topic        string `json:"topic"`
	Unsubscribed bool   `json:"unsubscribed"`
}

// InstalledFile is one settings file install/uninstall wrote or would write.
type InstalledFile struct {
	Path    string `json:"path"`
	Changed bool   `json:"changed"`
	Backup  string `json:"backup,omitempty"`
	Diff    string `json:"diff,omitempty"`
}

// Install is install --json and uninstall --json.
type Install struct {
	Harness   string          `json:"harness"`
	Installed bool            `json:"installed"` // false for uninstall
	DryRun    bool            `json:"dry_run"`
	Files     []InstalledFile `json:"files"`
}

// ToolResult is intercom tool --json: the text the model reads.
type ToolResult struct {
	Text string `json:"text"`
}

// ToolDescriptions is intercom tool --describe --json.
type ToolDescriptions struct {
	Intercom          string `json:"intercom"`
	ContactSupervisor string `json:"contact_supervisor"`
}

// ProgressAccepted is contact-supervisor --reason progress_update --json.
type ProgressAccepted struct {
	Accepted   bool   `json:"accepted"`
	ID         string `json:"id"` // the message id
	Supervisor string `json:"supervisor"`
}

// SupervisorAnswer is contact-supervisor --json for need_decision and
// interview_request.
type SupervisorAnswer struct {
	Reply                string                `json:"reply"`
	QuestionID           string                `json:"question_id"`
	RunID                string                `json:"run_id"`
	StructuredReply      *runs.StructuredReply `json:"structured_reply,omitempty"`
	StructuredReplyError string                `json:"structured_reply_error,omitempty"`
}
