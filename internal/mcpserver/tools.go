package mcpserver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/intercom-dev/intercom/internal/bounded"
	"github.com/intercom-dev/intercom/internal/config"
	"github.com/intercom-dev/intercom/internal/render"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// ToolDescription is the intercom tool's description wherever it is
// offered (MCP here, the Pi extension through `intercom tool --describe`).
const ToolDescription = `Find and message the other agent sessions on this machine.
Actions: list (this repository's sessions; scope "all" for every project), status,
send (non-blocking; steer by default: reaches the peer at its next tool boundary),
ask (blocks until the peer replies; only when you cannot continue without the answer),
reply (answers the current or single pending ask; "to" picks one of several),
pending (unresolved inbound asks), subscribe/unsubscribe/publish/topics (quiet shared
topic state and advisory resource ownership), reserve/release/reservations (enforced
leases on files: paths, shared, ttl, reason; another session's edit of a reserved file is blocked).`

// mcpToolDescription adds how an MCP client gets inbound messages.
const mcpToolDescription = ToolDescription + " New inbound messages are appended to results."

// ContactDescription is contact_supervisor's description.
const ContactDescription = `Contact the supervisor that delegated this task.
reason "need_decision": one blocking decision (waits for the reply, no timeout);
"interview_request": blocking structured questions ({title?, description?, questions:[{id,type,question,options?,context?}]});
"progress_update": a non-blocking material discovery. Do not use it for routine completion.`

// Attachment is an MCP attachment argument.
type Attachment struct {
	Type     string `json:"type" jsonschema:"file, snippet or context"`
	Name     string `json:"name,omitempty"`
	Language string `json:"language,omitempty"`
	Path     string `json:"path,omitempty" jsonschema:"for file: read now when content is empty"`
	Content  string `json:"content,omitempty"`
}

// ToolInput is the intercom tool's argument object (pi-intercom's names).
type ToolInput struct {
	Action       string       `json:"action" jsonschema:"list, send, ask, reply, pending, status, subscribe, unsubscribe, publish, topics, reserve, release or reservations"`
	Scope        string       `json:"scope,omitempty" jsonschema:"list/status: project (default) or all"`
	To           string       `json:"to,omitempty" jsonschema:"target session name, id or id prefix; for reply: which ask"`
	Message      string       `json:"message,omitempty"`
	Attachments  []Attachment `json:"attachments,omitempty"`
	ReplyTo      string       `json:"replyTo,omitempty"`
	Delivery     string       `json:"delivery,omitempty" jsonschema:"steer (default), queue or passive (send only)"`
	QueueMode    string       `json:"queueMode,omitempty" jsonschema:"stack (default) or replace (needs threadId)"`
	ThreadID     string       `json:"threadId,omitempty"`
	Passive      bool         `json:"passive,omitempty" jsonschema:"legacy alias for delivery passive"`
	Topic        string       `json:"topic,omitempty"`
	AwaitRelease bool         `json:"awaitRelease,omitempty"`
	Event        string       `json:"event,omitempty" jsonschema:"publish: update (default), blocker, decision or release"`
	Resource     string       `json:"resource,omitempty"`
	Ownership    string       `json:"ownership,omitempty" jsonschema:"held or released"`
	Paths        []string     `json:"paths,omitempty" jsonschema:"reserve/release/reservations: files, directories or globs, relative to the working directory"`
	Shared       bool         `json:"shared,omitempty" jsonschema:"reserve: a shared lease"`
	TTL          string       `json:"ttl,omitempty" jsonschema:"reserve: lease TTL, e.g. 30m (the default)"`
	Reason       string       `json:"reason,omitempty" jsonschema:"reserve: what the lease is for"`
	All          bool         `json:"all,omitempty" jsonschema:"release: every lease of this session"`
}

// ContactInput is contact_supervisor's argument object.
type ContactInput struct {
	Reason    string         `json:"reason" jsonschema:"need_decision, interview_request or progress_update"`
	Message   string         `json:"message,omitempty"`
	Interview map[string]any `json:"interview,omitempty"`
}

func (s *Server) handle(ctx context.Context, _ *mcp.CallToolRequest, in ToolInput) (*mcp.CallToolResult, any, error) {
	sid, deliver, err := s.session(ctx)
	if err != nil {
		return s.result(ctx, "", false, err.Error(), true), nil, nil
	}
	if deliver {
		s.busy(ctx, sid, "intercom")
	}
	text, err := Do(ctx, s.opts.Client, s.opts.Config, sid, in)
	if err != nil {
		return s.result(ctx, sid, deliver, err.Error(), true), nil, nil
	}
	return s.result(ctx, sid, deliver, text, false), nil, nil
}

func (s *Server) contact(ctx context.Context, _ *mcp.CallToolRequest, in ContactInput) (*mcp.CallToolResult, any, error) {
	sid, deliver, err := s.session(ctx)
	if err != nil {
		return s.result(ctx, "", false, err.Error(), true), nil, nil
	}
	if deliver {
		s.busy(ctx, sid, "contact_supervisor")
	}
	switch in.Reason {
	case "need_decision", "interview_request", "progress_update":
	default:
		return s.result(ctx, sid, deliver, fmt.Sprintf("invalid reason %q: want need_decision, interview_request or progress_update", in.Reason), true), nil, nil
	}
	text, structured, err := s.opts.Child(ctx, in.Reason, in.Message, in.Interview)
	if err != nil {
		return s.result(ctx, sid, deliver, err.Error(), true), nil, nil
	}
	return s.result(ctx, sid, deliver, ContactText(text, structured), false), nil, nil
}

// ContactText is contact_supervisor's result: the answer's text, with the
// structured responses of an interview answer when there are any.
func ContactText(text string, structured map[string]any) string {
	if responses, ok := structured["responses"]; ok {
		data, _ := json.Marshal(responses)
		text += "\n\nStructured responses: " + string(data)
	}
	return text
}

// validateDelivery checks the delivery arguments and leaves them as a
// SendRequest carries them; passive is the legacy alias of delivery passive.
func validateDelivery(in *ToolInput, ask bool) error {
	if in.Passive {
		if in.Delivery != "" && in.Delivery != wire.DeliveryPassive {
			return errors.New("passive cannot be combined with another delivery")
		}
		in.Delivery = wire.DeliveryPassive
	}
	var err error
	in.Delivery, in.QueueMode, err = wire.ParseDelivery(in.Delivery, in.QueueMode, in.ThreadID, ask, toolDeliveryFields)
	return err
}

// toolDeliveryFields names the delivery arguments in ParseDelivery's errors.
var toolDeliveryFields = wire.DeliveryFields{Delivery: "delivery", QueueMode: "queueMode", Thread: "threadId"}

func attachments(in []Attachment) ([]wire.Attachment, error) {
	out := make([]wire.Attachment, 0, len(in))
	for i, a := range in {
		w := wire.Attachment{Type: a.Type, Name: a.Name, Language: a.Language, Path: a.Path, Content: a.Content}
		if a.Type == "file" && a.Content == "" && a.Path != "" {
			data, err := bounded.ReadFile(a.Path, fmt.Sprintf("attachment %d (%s)", i+1, a.Path), wire.MaxMessageBytes)
			if err != nil {
				return nil, fmt.Errorf("attachment %d: %w", i+1, err)
			}
			w.Content = string(data)
		}
		if w.Name == "" { // the schema requires only type: name it after its path or type
			w.Name = cmp.Or(filepath.Base(a.Path), a.Type)
			if a.Path == "" {
				w.Name = a.Type
			}
		}
		out = append(out, w)
	}
	return out, nil
}

// Do runs one action of the intercom tool as session self and returns the
// text the model reads (the MCP server and `intercom tool` share it).
func Do(ctx context.Context, c *intercom.Client, cfg config.Config, self string, in ToolInput) (string, error) {
	switch in.Action {
	case "list", "status":
		rows, err := c.List(ctx, intercom.ListOptions{Self: self, Scope: in.Scope})
		if err != nil {
			return "", err
		}
		var b strings.Builder
		if in.Action == "status" {
			fmt.Fprintf(&b, "Connected: Yes, Session ID: %s, Active sessions: %d\n", self, len(rows))
		}
		render.Sessions(&b, rows)
		return b.String(), nil
	case "send", "ask":
		ask := in.Action == "ask"
		if err := validateDelivery(&in, ask); err != nil {
			return "", err
		}
		if in.To == "" || (strings.TrimSpace(in.Message) == "" && len(in.Attachments) == 0) {
			return "", fmt.Errorf("%s needs to and message", in.Action)
		}
		att, err := attachments(in.Attachments)
		if err != nil {
			return "", err
		}
		req := wire.SendRequest{From: self, To: in.To, Text: in.Message, Delivery: in.Delivery, DeliverySet: in.Delivery != "",
			QueueMode: in.QueueMode, Thread: in.ThreadID, ReplyTo: in.ReplyTo, Attachments: att}
		if !ask {
			res, err := c.Send(ctx, req)
			if err != nil {
				return "", err
			}
			text := fmt.Sprintf("Message sent to %s (id %s). This session can end its turn or continue independent work.", res.To.Target, res.ID)
			switch {
			case res.Held:
				text = fmt.Sprintf("Message held for %s (id %s): it holds inbound messages, and it is delivered only if a person approves it. Do not wait for it.", res.To.Target, res.ID)
			case res.Offline:
				text = fmt.Sprintf("Message stored for %s (id %s), which is offline; it is delivered when it resumes.", res.To.Target, res.ID)
			}
			if note := render.WakeHeldNote(res.WakeHeld, res.To.Target); note != "" {
				text += "\n" + note
			}
			return text, nil
		}
		res, err := c.Ask(ctx, req, cfg.AskTimeout())
		if errors.Is(err, intercom.ErrAskHeld) {
			return fmt.Sprintf("%s holds inbound messages: the ask %s waits for a person's approval and nobody waits for its reply. Continue without it.", res.To.Target, res.AskID), nil
		}
		if errors.Is(err, intercom.ErrPeerBusy) {
			return fmt.Sprintf("%s does not accept asks now (peer_busy); the message %s was delivered but nobody waits for a reply. Use send instead, or delivery steer to wait.", res.To.Target, res.AskID), nil
		}
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("Reply from %s:\n\n%s", render.Line(res.Reply.From.Name), render.Text(res.Reply.Text)), nil
	case "reply":
		if strings.TrimSpace(in.Message) == "" {
			return "", errors.New("reply needs message")
		}
		a, res, err := c.Reply(ctx, self, cmp.Or(in.To, in.ReplyTo), in.Message, nil)
		if many := (*intercom.AmbiguousAskError)(nil); errors.As(err, &many) {
			return "", fmt.Errorf("Multiple pending asks — specify `to`: %s", many.Choices(render.Line))
		}
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("Reply sent to %s (id %s).", render.Line(a.From.Name), res.ID), nil
	case "pending":
		asks, err := c.Pending(ctx, self)
		if err != nil {
			return "", err
		}
		if len(asks) == 0 {
			return "No pending asks.", nil
		}
		var b strings.Builder
		for _, a := range asks {
			t := a.SentAt
			fmt.Fprintf(&b, "• from %s, %s — replyTo: %s\n  %s\n  intercom({ action: \"reply\", to: %q, message: \"...\" })\n", render.Line(a.From.Name), render.Ago(&t), a.AskID, render.Line(a.Text), a.AskID)
		}
		return b.String(), nil
	case "subscribe", "unsubscribe":
		if err := wire.ValidateTopic(in.Topic); err != nil {
			return "", err
		}
		if in.Action == "unsubscribe" {
			if err := c.Unsubscribe(ctx, self, in.Topic); err != nil {
				return "", err
			}
			return "Unsubscribed from " + in.Topic + ".", nil
		}
		res, err := c.Subscribe(ctx, self, in.Topic, in.AwaitRelease)
		if err != nil {
			return "", err
		}
		if res.AwaitRelease {
			return "Subscribed to " + in.Topic + " (woken on release).", nil
		}
		return "Subscribed to " + in.Topic + ".", nil
	case "publish":
		if err := wire.ValidateTopic(in.Topic); err != nil {
			return "", err
		}
		res, err := c.Publish(ctx, wire.PublishRequest{From: self, Topic: in.Topic, Event: in.Event, Message: in.Message,
			Resource: in.Resource, Ownership: in.Ownership})
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("Published %s on %s; woke %d subscriber(s).", defaultEvent(in.Event), in.Topic, res.Woken), nil
	case "reserve", "release", "reservations":
		return doReservation(ctx, c, self, in)
	case "topics":
		if in.Topic != "" {
			if err := wire.ValidateTopic(in.Topic); err != nil {
				return "", err
			}
		}
		topics, err := c.Topics(ctx, in.Topic)
		if err != nil {
			return "", err
		}
		var b strings.Builder
		if len(topics) == 0 {
			b.WriteString("No topic state.")
		}
		for _, t := range topics {
			fmt.Fprintf(&b, "Topic %s\n", t.Topic)
			for _, r := range t.Resources {
				fmt.Fprintf(&b, "  resource %s: %s\n", r.Resource, r.State)
			}
			for _, r := range t.Records {
				fmt.Fprintf(&b, "  • %s (%s): %s\n", render.Line(r.From.Name), r.Event, render.Line(r.Message))
			}
		}
		return b.String(), nil
	}
	return "", fmt.Errorf("invalid action %q: want list, send, ask, reply, pending, status, subscribe, unsubscribe, publish, topics, reserve, release or reservations", in.Action)
}

func defaultEvent(e string) string {
	if e == "" {
		return wire.EventUpdate
	}
	return e
}

// Closed vocabularies of the intercom tool's arguments, published as enums
// in its input schema.
var toolEnums = map[string][]any{
	"action":    {"list", "send", "ask", "reply", "pending", "status", "subscribe", "unsubscribe", "publish", "topics", "reserve", "release", "reservations"},
	"scope":     {"project", "all"},
	"delivery":  {wire.DeliverySteer, wire.DeliveryQueue, wire.DeliveryPassive},
	"queueMode": {"stack", "replace"},
	"event":     {wire.EventUpdate, wire.EventBlocker, wire.EventDecision, wire.EventRelease},
	"ownership": {wire.OwnershipHeld, wire.OwnershipReleased},
}

// toolSchema is ToolInput's schema with the enums; an attachment needs only
// its type (file, snippet or context).
func toolSchema() (*jsonschema.Schema, error) {
	s, err := jsonschema.For[ToolInput](nil)
	if err != nil {
		return nil, err
	}
	for name, values := range toolEnums {
		s.Properties[name].Enum = values
	}
	if att := s.Properties["attachments"].Items; att != nil {
		att.Properties["type"].Enum = []any{"file", "snippet", "context"}
	}
	return s, nil
}

// contactSchema is ContactInput's schema with the reasons as an enum.
func contactSchema() (*jsonschema.Schema, error) {
	s, err := jsonschema.For[ContactInput](nil)
	if err != nil {
		return nil, err
	}
	s.Properties["reason"].Enum = []any{"need_decision", "interview_request", "progress_update"}
	return s, nil
}
