// Package wire defines the JSON messages exchanged between intercom clients
// and the broker over NATS, and the subjects they travel on. It is public so
// that programs other than ours can speak to a broker.
package wire

import (
	"fmt"
	"time"
)

// DefaultRequestTimeout is how long a client waits for the broker's answer
// to one request unless told otherwise (config's sendTimeoutMs).
const DefaultRequestTimeout = 8 * time.Second

// Subjects. Requests go to API subjects and get one JSON reply; pushes to a
// holder go to Deliver(sessionID).
const (
	SubjectPrefix = "ic.v1."
	SubjRegister  = SubjectPrefix + "register"
	SubjUnreg     = SubjectPrefix + "unregister"
	SubjList      = SubjectPrefix + "list"
	SubjState     = SubjectPrefix + "state"
	SubjSend      = SubjectPrefix + "send"
	SubjAck       = SubjectPrefix + "ack"
	SubjInbox     = SubjectPrefix + "inbox"
	SubjPending   = SubjectPrefix + "pending"
	SubjForget    = SubjectPrefix + "forget"
	SubjAskCancel = SubjectPrefix + "askcancel"
	SubjAskWait   = SubjectPrefix + "askwait"
	SubjPing      = SubjectPrefix + "ping"
	SubjSubscribe = SubjectPrefix + "subscribe"
	SubjUnsub     = SubjectPrefix + "unsubscribe"
	SubjPublish   = SubjectPrefix + "publish"
	SubjTopics    = SubjectPrefix + "topics"
	deliverPrefix = SubjectPrefix + "deliver."
)

// Deliver is the subject on which the broker pushes messages to the holder of
// session id that registered with holder token token. Each holder picks a
// fresh token, so pushes meant for a previous holder of the same session
// (still in flight when it died) never reach the next one ahead of its
// backlog.
func Deliver(id, token string) string { return deliverPrefix + id + "." + token }

// Limits.
const (
	MaxMessageBytes = 1 << 20 // whole message: text plus attachments
	MaxNameLen      = 64
	MaxLabelLen     = 4096
)

// Session states.
const (
	StateIdle         = "idle"
	StateBusy         = "busy"
	StateUnknown      = "unknown"
	StateDisconnected = "disconnected"
	// StateUnreachable: a session of a bridged host whose link is down (cut,
	// silent, its bridge dead), connected when last heard of. It is not
	// connected (asks are refused, sends wait in the outbox) and not gone:
	// the host has not said it left.
	StateUnreachable = "unreachable"
)

// Session is one row of presence.
type Session struct {
	ID                   string     `json:"id"`
	Name                 string     `json:"name"`
	Target               string     `json:"target"`
	Cwd                  string     `json:"cwd"`
	Project              string     `json:"project"`
	Model                string     `json:"model"`
	Status               string     `json:"status"`
	State                string     `json:"state"`
	AcceptsAsks          bool       `json:"accepts_asks"`
	PendingAsks          int        `json:"pending_asks"`
	LastIntercomActivity *time.Time `json:"last_intercom_activity"`
	LastSeen             time.Time  `json:"last_seen"`
	Connected            bool       `json:"connected"`
	Ephemeral            bool       `json:"ephemeral,omitempty"`
	Self                 bool       `json:"self"`
	Queued               int        `json:"queued"`
	Host                 string     `json:"host,omitempty"` // set on sessions of a bridged machine
	// Set while the session is stuck (the broker's stuck.go): since when,
	// for how long (whole seconds, as the broker saw it) and why
	// (StuckBusy or StuckSteers). State keeps its value (busy, idle).
	StuckSince   time.Time `json:"stuck_since,omitzero"`
	StuckSeconds int       `json:"stuck_seconds,omitempty"`
	StuckReason  string    `json:"stuck_reason,omitempty"`
	// Person: the broker found a person behind the session's connection
	// (intercom ui, a terminal), not an agent; its messages carry
	// Message.FromPerson.
	Person bool `json:"person,omitempty"`
	// WakePaused names the sessions (their targets, comma-separated) whose
	// wake-ups with this one the loop breaker paused; a person's message to
	// either resumes them.
	WakePaused string `json:"wake_paused,omitempty"`
}

// Why a session is stuck (Session.StuckReason).
const (
	StuckBusy   = "busy"           // the same busy status with no boundary for too long
	StuckSteers = "steers_waiting" // a steer has waited in its inbox for too long
)

// RegisterRequest creates or resumes a session held by the sending connection.
type RegisterRequest struct {
	ID     string `json:"id,omitempty"` // resume this id, or request it for a new session
	Resume bool   `json:"resume,omitempty"`
	// Exact: take over ID or fail. ID is created when unknown and resumed
	// when free; a live holder of it is refused (CodeHeld), never replaced by
	// a new session under another id.
	Exact       bool   `json:"exact,omitempty"`
	Name        string `json:"name,omitempty"`
	Cwd         string `json:"cwd"`
	Project     string `json:"project"`
	Model       string `json:"model,omitempty"`
	Status      string `json:"status,omitempty"`
	AcceptsAsks *bool  `json:"accepts_asks,omitempty"`
	ClientID    uint64 `json:"client_id"` // the NATS client id of the holding connection
	Ephemeral   bool   `json:"ephemeral,omitempty"`
	Holder      bool   `json:"holder,omitempty"`       // push messages to Deliver(id, HolderToken)
	HolderToken string `json:"holder_token,omitempty"` // the holder's delivery token (letters and digits)
	// Batches: the holder takes several messages in one push, a JSON array
	// of Message (DecodePushed); a broker that predates it pushes one each.
	Batches bool `json:"batches,omitempty"`
	// Supervisor is the session's supervisor (id or name; INTERCOM_SUPERVISOR
	// of a run's child): its messages always wake the session.
	Supervisor string `json:"supervisor,omitempty"`
}

// RegisterReply answers RegisterRequest.
type RegisterReply struct {
	Session Session `json:"session"`
	Resumed bool    `json:"resumed"` // the session existed before this registration
}

// SessionRef names a session by id.
type SessionRef struct {
	SessionID string `json:"session_id"`
}

// ListRequest asks for presence rows.
type ListRequest struct {
	Self                string `json:"self,omitempty"`
	Project             string `json:"project,omitempty"`
	Scope               string `json:"scope,omitempty"` // project (default) or all
	IncludeDisconnected bool   `json:"include_disconnected,omitempty"`
	// ID asks for that one session's row (none when unknown), as a hook
	// checks its own session at every tool call. A broker from before this
	// field answers every row: callers still pick the row they want.
	ID string `json:"id,omitempty"`
}

// ListReply answers ListRequest.
type ListReply struct {
	Sessions []Session `json:"sessions"`
}

// StateRequest reports a holder's lifecycle.
type StateRequest struct {
	SessionID   string `json:"session_id"`
	Status      string `json:"status,omitempty"` // idle, thinking, tool:NAME (+ optional " · suffix")
	AcceptsAsks *bool  `json:"accepts_asks,omitempty"`
}

// Delivery modes.
const (
	DeliverySteer   = "steer"
	DeliveryQueue   = "queue"
	DeliveryPassive = "passive"
)

// Attachment is carried with a message; its content is part of the body.
type Attachment struct {
	Type     string `json:"type"` // file, snippet, context
	Name     string `json:"name"`
	Language string `json:"language,omitempty"`
	Path     string `json:"path,omitempty"`
	Content  string `json:"content"`
}

// Peer identifies a message's sender.
type Peer struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Cwd  string `json:"cwd,omitempty"`
}

// Message is what a holder receives.
type Message struct {
	ID           string       `json:"id"`
	Seq          uint64       `json:"seq"`
	From         Peer         `json:"from"`
	To           string       `json:"to"`
	Text         string       `json:"text"`
	Delivery     string       `json:"delivery"`
	ExpectsReply bool         `json:"expects_reply"`
	ReplyTo      string       `json:"reply_to,omitempty"`
	Thread       string       `json:"thread,omitempty"`
	QueueMode    string       `json:"queue_mode,omitempty"`
	Attachments  []Attachment `json:"attachments,omitempty"`
	SentAt       time.Time    `json:"sent_at"`
	// Set on topic wake-ups (blocker, decision, release).
	Topic     string `json:"topic,omitempty"`
	Event     string `json:"event,omitempty"`
	Resource  string `json:"resource,omitempty"`
	Ownership string `json:"ownership,omitempty"`
	// FromPerson: a person sent it (set by the broker, never by a sender).
	// A digest puts it first; it always wakes its reader.
	FromPerson bool `json:"from_person,omitempty"`
	// WakeHeld says why the broker does not let this steer wake its idle
	// reader (WakeHeldBudget, WakeHeldLoop): it reaches the reader at its
	// next natural boundary, like a passive message. Set only on the way
	// out (inbox, pushes), never stored.
	WakeHeld string `json:"wake_held,omitempty"`
}

// Why a steer does not wake its idle reader (Message.WakeHeld).
const (
	WakeHeldBudget = "wake_budget" // its reader was woken by peers too often lately
	WakeHeldLoop   = "wake_loop"   // its sender and reader woke each other in a loop
)

// Wakes reports whether m may wake an idle reader: not passive, and not
// held back by the broker's wake budget or loop breaker.
func (m *Message) Wakes() bool { return m.Delivery != DeliveryPassive && m.WakeHeld == "" }

// Size is the message's payload size counted against MaxMessageBytes.
func (m *Message) Size() int {
	n := len(m.Text)
	for _, a := range m.Attachments {
		n += len(a.Content) + len(a.Name) + len(a.Language) + len(a.Path)
	}
	return n
}

// SendRequest submits a message. The broker answers only after it is
// durably in the recipient's inbox.
type SendRequest struct {
	From         string       `json:"from"` // sender session id
	To           string       `json:"to"`   // target: name, id or id prefix
	Text         string       `json:"text"`
	Delivery     string       `json:"delivery,omitempty"`
	DeliverySet  bool         `json:"delivery_set,omitempty"` // delivery was chosen explicitly
	ExpectsReply bool         `json:"expects_reply,omitempty"`
	ReplyTo      string       `json:"reply_to,omitempty"`
	Thread       string       `json:"thread,omitempty"`
	QueueMode    string       `json:"queue_mode,omitempty"` // "" or replace
	Attachments  []Attachment `json:"attachments,omitempty"`
	ClientMsgID  string       `json:"client_msg_id,omitempty"` // idempotency key per sender
	// For asks: where the broker publishes the AskEvent, and how long the
	// obligation lives.
	WaitSubject string `json:"wait_subject,omitempty"`
	TimeoutMs   int64  `json:"timeout_ms,omitempty"`
	// Lean: the reply's To carries only the recipient's id and name
	// (LeanRecipient), cheaper to write and to read for a pipelined
	// sender. A broker that predates it sends the whole row.
	Lean bool `json:"lean,omitempty"`
	// BatchReply: the reply may come together with the replies of other
	// sends committed with it to the same reply prefix (the reply subject
	// up to its last '.'), in one message on prefix + "." + ReplyBatchToken
	// (AppendBatchedReply). A broker that predates it answers each alone.
	BatchReply bool `json:"batch_reply,omitempty"`
}

// SendReply reports acceptance.
type SendReply struct {
	ID        string  `json:"id"`
	To        Session `json:"to"`
	Offline   bool    `json:"offline"`
	Duplicate bool    `json:"duplicate"`
	PeerBusy  bool    `json:"peer_busy"`
	// Remote targets: Queued means stored in the local outbox because the
	// bridge link is down; RemoteStored means the remote broker stored it.
	Queued       bool `json:"queued"`
	RemoteStored bool `json:"remote_stored"`
	// Held: the recipient holds inbound messages; a person approves or
	// refuses this one (`intercom held`), and trace tells which.
	Held bool `json:"held,omitempty"`
	// WakeHeld: the recipient is idle and this message does not wake it
	// (wire.WakeHeldBudget, WakeHeldLoop); it reaches it at its next
	// natural boundary.
	WakeHeld string `json:"wake_held,omitempty"`
}

// AskEvent is published to an ask's WaitSubject.
type AskEvent struct {
	AskID  string   `json:"ask_id"`
	Reply  *Message `json:"reply,omitempty"`
	Reason string   `json:"reason,omitempty"` // peer_disconnected, asker_disconnected, timeout
	Error  string   `json:"error,omitempty"`
}

// AskWaitRequest (re)registers a waiter for an ask that was already sent,
// e.g. after a broker restart. A reply already stored in the asker's inbox
// is handed to the waiter at once.
type AskWaitRequest struct {
	SessionID   string `json:"session_id"` // the asker
	AskID       string `json:"ask_id"`
	To          string `json:"to"` // the asked session id
	Text        string `json:"text"`
	WaitSubject string `json:"wait_subject"`
	TimeoutMs   int64  `json:"timeout_ms,omitempty"`
}

// AckRequest confirms delivery of messages to a holder.
type AckRequest struct {
	SessionID string   `json:"session_id"`
	IDs       []string `json:"ids"`
}

// AckReply answers AckRequest.
type AckReply struct {
	Acked int `json:"acked"`
}

// InboxRequest fetches undelivered messages.
type InboxRequest struct {
	SessionID string `json:"session_id"`
	Limit     int    `json:"limit,omitempty"`
	Peek      bool   `json:"peek,omitempty"` // only look: not recorded as a fetch
}

// InboxReply answers InboxRequest.
type InboxReply struct {
	Messages []Message `json:"messages"`
}

// PendingAsk is an unresolved inbound ask.
type PendingAsk struct {
	AskID      string    `json:"reply_to"`
	From       Peer      `json:"from"`
	FromTarget string    `json:"from_target"`
	Text       string    `json:"text"`
	SentAt     time.Time `json:"sent_at"`
	ExpiresAt  time.Time `json:"expires_at"`
}

// PendingReply answers a pending request.
type PendingReply struct {
	Asks []PendingAsk `json:"asks"`
}

// Empty is the reply of requests with no result.
type Empty struct{}

// Pong answers SubjPing. Version is the broker's build (buildinfo); a
// broker older than this field answers {} (Version "").
type Pong struct {
	Version string `json:"version,omitempty"`
}

// Error codes returned by the broker.
const (
	CodeBadRequest  = "bad_request"
	CodeNotFound    = "not_found"
	CodeAmbiguous   = "ambiguous"
	CodeSelf        = "self_target"
	CodeTooLarge    = "too_large"
	CodeAskBusy     = "ask_in_progress"
	CodePeerOffline = "peer_offline"
	CodeNoSpace     = "no_space"
	// CodeStoreUnavailable: the broker's store cannot be written (its home
	// was deleted, made read-only, or the disk fails); the broker stops.
	CodeStoreUnavailable = "store_unavailable"
	CodeInternal         = "internal"
	CodeFull             = "full"
	CodeHeld             = "session_held"   // another live connection holds the session
	CodeQuota            = "quota_exceeded" // a bridged host went over one of its quotas or rates
	CodeResourceHeld     = "resource_held"  // another session holds the resource a publication declares
)

// Error is a broker error reply.
type Error struct {
	Code    string   `json:"code"`
	Message string   `json:"message"`
	Choices []string `json:"choices,omitempty"`
}

func (e *Error) Error() string { return e.Message }

// Errorf builds an Error.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Reply is the envelope of every API reply: exactly one of Error or Result.
type Reply[T any] struct {
	Error  *Error `json:"error,omitempty"`
	Result *T     `json:"result,omitempty"`
}

// Is makes errors.Is(err, &Error{Code: c}) match any error with code c.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Code == e.Code
}

// Topic events and ownership.
const (
	EventUpdate   = "update"
	EventBlocker  = "blocker"
	EventDecision = "decision"
	EventRelease  = "release"

	OwnershipHeld        = "held"
	OwnershipReleased    = "released"
	OwnershipUnavailable = "unavailable"
)

// SubscribeRequest subscribes (or unsubscribes) a session to a topic.
type SubscribeRequest struct {
	SessionID    string `json:"session_id"`
	Topic        string `json:"topic"`
	AwaitRelease bool   `json:"await_release,omitempty"`
}

// SubscribeReply answers SubscribeRequest.
type SubscribeReply struct {
	Topic        string `json:"topic"`
	AwaitRelease bool   `json:"await_release"`
	Existed      bool   `json:"existed"`
}

// PublishRequest replaces the sender's current record on a topic.
type PublishRequest struct {
	From      string `json:"from"`
	Topic     string `json:"topic"`
	Event     string `json:"event,omitempty"` // default update
	Message   string `json:"message"`
	Resource  string `json:"resource,omitempty"`
	Ownership string `json:"ownership,omitempty"`
	// Version orders one sender's publications: a publication older than the
	// stored record is ignored. 0 means "now".
	Version int64 `json:"version,omitempty"`
	// ClientMsgID is an idempotency key per sender: a retried publication
	// with the same key is applied once (its wake-ups are not repeated).
	ClientMsgID string `json:"client_msg_id,omitempty"`
}

// PublishReply reports the outcome.
type PublishReply struct {
	Topic     string `json:"topic"`
	Seq       uint64 `json:"seq"`
	Stale     bool   `json:"stale,omitempty"`     // a newer record was already stored
	Woken     int    `json:"woken"`               // subscribers that got a steer message
	Duplicate bool   `json:"duplicate,omitempty"` // a retry of a publication already applied (Seq is its)
}

// TopicsRequest reads topic state, one page at a time: the reply holds
// topics (and, within a topic, records) from Offset on, up to about MaxBytes
// of JSON (0: the broker's default), and NextOffset for the rest.
type TopicsRequest struct {
	Topic    string `json:"topic,omitempty"`
	Offset   int    `json:"offset,omitempty"`
	MaxBytes int    `json:"max_bytes,omitempty"`
}

// TopicRecord is one sender's current publication.
type TopicRecord struct {
	Topic           string    `json:"topic"`
	From            Peer      `json:"from"`
	Event           string    `json:"event"`
	Message         string    `json:"message"`
	Resource        string    `json:"resource,omitempty"`
	Ownership       string    `json:"ownership,omitempty"`          // effective: held, released or unavailable
	Declared        string    `json:"declared_ownership,omitempty"` // as published
	SenderConnected bool      `json:"sender_connected"`
	Seq             uint64    `json:"seq"`
	Version         int64     `json:"version"`
	PublishedAt     time.Time `json:"published_at"`
}

// TopicSubscriber is one subscription.
type TopicSubscriber struct {
	SessionID    string `json:"session_id"`
	Name         string `json:"name"`
	AwaitRelease bool   `json:"await_release"`
	Connected    bool   `json:"connected"`
}

// ResourceState is the advisory owner of a resource.
type ResourceState struct {
	Resource string `json:"resource"`
	State    string `json:"state"` // held, released, unavailable
	Holder   *Peer  `json:"holder,omitempty"`
	Message  string `json:"message,omitempty"`
}

// TopicInfo is a topic's current state.
type TopicInfo struct {
	Topic       string            `json:"topic"`
	Records     []TopicRecord     `json:"records"`
	Subscribers []TopicSubscriber `json:"subscribers"`
	Resources   []ResourceState   `json:"resources"`
}

// TopicsReply answers TopicsRequest. A topic too big for one page continues
// on the next one (same topic name, more records); NextOffset is 0 on the
// last page.
type TopicsReply struct {
	Topics     []TopicInfo `json:"topics"`
	NextOffset int         `json:"next_offset,omitempty"`
}

// Delivery timeline and waiting for mail.
const (
	SubjTrace     = SubjectPrefix + "trace"
	SubjInboxWait = SubjectPrefix + "inboxwait"
)

// InboxWaitRequest blocks until the session has a deliverable message or
// the timeout passes.
type InboxWaitRequest struct {
	SessionID string `json:"session_id"`
	TimeoutMs int64  `json:"timeout_ms"`
	// WakeOnly ignores passive messages, which never wake anyone.
	WakeOnly bool `json:"wake_only,omitempty"`
}

// InboxWaitReply answers InboxWaitRequest.
type InboxWaitReply struct {
	Ready bool `json:"ready"`
	// Arrived holds the messages that came while waiting and went to the
	// session's delivering holder (attach): they end the wait though the
	// holder may have taken them already.
	Arrived []Message `json:"arrived,omitempty"`
}

// TraceRequest asks for a message's delivery timeline.
type TraceRequest struct {
	ID string `json:"id"`
}

// Trace is a message's delivery timeline: stored (accepted), pushed to a
// holder or fetched by inbox, and delivered to the agent (acknowledged).
type Trace struct {
	ID      string      `json:"id"`
	From    Peer        `json:"from"`
	To      string      `json:"to"`
	State   string      `json:"state"` // held, refused, stored, pushed, fetched, acked
	Stored  time.Time   `json:"stored_at"`
	Pushed  []time.Time `json:"pushed_at,omitempty"`
	Fetched []time.Time `json:"fetched_at,omitempty"`
	Acked   *time.Time  `json:"acked_at,omitempty"`
	// A held message (inbound hold): when it was held, and when and how a
	// person decided (approved, refused).
	FromPerson bool       `json:"from_person,omitempty"`
	HeldAt     *time.Time `json:"held_at,omitempty"`
	DecidedAt  *time.Time `json:"decided_at,omitempty"`
	Decision   string     `json:"decision,omitempty"`
}

// SubjStats answers with the broker's runtime figures (for soak tests and
// operators).
const SubjStats = SubjectPrefix + "stats"

// Stats is the broker's runtime state.
type Stats struct {
	Goroutines int    `json:"goroutines"`
	HeapAlloc  uint64 `json:"heap_alloc"`
	Sessions   int    `json:"sessions"`
	Connected  int    `json:"connected"`
	Clients    int    `json:"clients"`
	Asks       int    `json:"asks"`
	Traces     int    `json:"traces"`
	Waiters    int    `json:"waiters"`
	// TraceEventsPending: pushes and fetches not yet written to the store.
	TraceEventsPending int `json:"trace_events_pending"`
}
