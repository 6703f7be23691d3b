package wire

import (
	"fmt"
	"strings"
)

// Request validation: what the broker accepts, in one place. The broker
// applies these to every request, from its clients and from bridged hosts
// alike; a request that passes is normalised (defaults filled in) and may be
// stored. Each returns an *Error with CodeBadRequest, or CodeTooLarge for a
// body over MaxMessageBytes.

// MaxAckIDs is the most message ids one AckRequest may carry.
const MaxAckIDs = 10000

func badRequest(format string, a ...any) *Error { return Errorf(CodeBadRequest, format, a...) }

// ValidateMessage checks a message body as a send carries it: not empty,
// text without control characters, well-formed attachments and at most
// MaxMessageBytes in all.
func ValidateMessage(text string, att []Attachment) error {
	if strings.TrimSpace(text) == "" && len(att) == 0 {
		return badRequest("message is empty")
	}
	if err := ValidText("message", text); err != nil {
		return badRequest("%v", err)
	}
	return validateBody(text, att)
}

// validateBody checks the attachments and the size of a message.
func validateBody(text string, att []Attachment) error {
	for i, a := range att {
		switch a.Type {
		case "file", "snippet", "context":
		default:
			return badRequest("attachment %d: invalid type %q: want file, snippet or context", i+1, a.Type)
		}
		if err := ValidLabel(fmt.Sprintf("attachment %d name", i+1), a.Name); err != nil {
			return badRequest("%v", err)
		}
		if a.Language != "" {
			if err := ValidLabel(fmt.Sprintf("attachment %d language", i+1), a.Language); err != nil {
				return badRequest("%v", err)
			}
		}
	}
	m := Message{Text: text, Attachments: att}
	if n := m.Size(); n > MaxMessageBytes {
		return Errorf(CodeTooLarge, "message too large (%d bytes; max %d)", n, MaxMessageBytes)
	}
	return nil
}

// ValidateSend checks a send and sets its default delivery (steer).
func ValidateSend(req *SendRequest) error {
	if req.From == "" {
		return badRequest("send: sender session is required")
	}
	if strings.TrimSpace(req.To) == "" {
		return badRequest("send: target is required")
	}
	if strings.TrimSpace(req.Text) == "" && len(req.Attachments) == 0 {
		return badRequest("send: message is empty")
	}
	if err := ValidText("message", req.Text); err != nil {
		return badRequest("%v", err)
	}
	if req.Delivery == "" {
		req.Delivery = DeliverySteer
	}
	switch req.Delivery {
	case DeliverySteer, DeliveryQueue, DeliveryPassive:
	default:
		return badRequest("invalid delivery %q: want steer, queue or passive", req.Delivery)
	}
	if req.Delivery == DeliveryPassive && req.ExpectsReply {
		return badRequest("passive delivery cannot be used for an ask")
	}
	switch req.QueueMode {
	case "":
		if req.Thread != "" {
			return badRequest("thread is only valid with queue mode replace")
		}
	case QueueModeReplace:
		if req.Delivery != DeliveryQueue {
			return badRequest("queue mode replace requires delivery queue")
		}
		if req.Thread == "" {
			return badRequest("queue mode replace requires a thread")
		}
		if req.ExpectsReply {
			return badRequest("an ask cannot use queue mode replace")
		}
		if err := ValidLabel("thread", req.Thread); err != nil {
			return badRequest("%v", err)
		}
	default:
		return badRequest("invalid queue mode %q: want replace", req.QueueMode)
	}
	if req.ReplyTo != "" {
		if err := ValidLabel("reply_to", req.ReplyTo); err != nil {
			return badRequest("%v", err)
		}
	}
	if req.ClientMsgID != "" && !ValidClientMsgID(req.ClientMsgID) {
		return badRequest("invalid client message id")
	}
	if err := validateBody(req.Text, req.Attachments); err != nil {
		return err
	}
	if req.TimeoutMs < 0 {
		return badRequest("invalid ask timeout")
	}
	return nil
}

// ValidatePublish checks a publication and sets its default event
// (update).
func ValidatePublish(req *PublishRequest) error {
	if err := ValidateTopic(req.Topic); err != nil {
		return badRequest("%v", err)
	}
	if req.Event == "" {
		req.Event = EventUpdate
	}
	switch req.Event {
	case EventUpdate, EventBlocker, EventDecision, EventRelease:
	default:
		return badRequest("invalid event %q: want update, blocker, decision or release", req.Event)
	}
	if strings.TrimSpace(req.Message) == "" {
		return badRequest("publish: message is required (a record is self-contained current state)")
	}
	if err := ValidText("message", req.Message); err != nil {
		return badRequest("%v", err)
	}
	if len(req.Message) > MaxMessageBytes {
		return Errorf(CodeTooLarge, "message too large (%d bytes; max %d)", len(req.Message), MaxMessageBytes)
	}
	if (req.Resource == "") != (req.Ownership == "") {
		return badRequest("--resource and --ownership go together")
	}
	if req.Resource != "" {
		if err := ValidLabel("resource", req.Resource); err != nil || len(req.Resource) > MaxResourceLen {
			return badRequest("invalid resource %q", req.Resource)
		}
		switch req.Ownership {
		case OwnershipHeld, OwnershipReleased:
		default:
			return badRequest("invalid ownership %q: want held or released", req.Ownership)
		}
	}
	if req.Event == EventRelease && req.Ownership == OwnershipHeld {
		return badRequest("a release cannot declare ownership held")
	}
	if req.Version < 0 {
		return badRequest("invalid version")
	}
	if req.ClientMsgID != "" && !ValidClientMsgID(req.ClientMsgID) {
		return badRequest("invalid client message id")
	}
	return nil
}

// ValidateSubscribe checks a subscription (or unsubscription).
func ValidateSubscribe(req SubscribeRequest) error {
	if err := ValidateTopic(req.Topic); err != nil {
		return badRequest("%v", err)
	}
	return nil
}

// ValidateTopics checks a topics read: one topic, or all ("").
func ValidateTopics(req TopicsRequest) error {
	if req.Topic == "" {
		return nil
	}
	return ValidateSubscribe(SubscribeRequest{Topic: req.Topic})
}

// ValidateRegister checks a registration and fills in its defaults: the
// project is the cwd, the status idle.
func ValidateRegister(req *RegisterRequest) error {
	if req.Name != "" {
		if err := ValidateName(req.Name); err != nil {
			return badRequest("%v", err)
		}
	}
	if req.ID != "" {
		if err := ValidID(req.ID); err != nil {
			return badRequest("%v", err)
		}
	}
	if err := ValidLabel("cwd", req.Cwd); err != nil {
		return badRequest("%v", err)
	}
	if req.Project == "" {
		req.Project = req.Cwd
	}
	if req.Status == "" {
		req.Status = "idle"
	}
	if err := ValidateStatus(req.Status); err != nil {
		return badRequest("%v", err)
	}
	if req.Model != "" {
		if err := ValidLabel("model", req.Model); err != nil {
			return badRequest("%v", err)
		}
	}
	if req.Holder && !ValidHolderToken(req.HolderToken) {
		return badRequest("register: a holder needs a holder_token of 1-64 letters and digits")
	}
	return nil
}

// ValidateState checks a lifecycle report; an empty status leaves the
// status as it is.
func ValidateState(req StateRequest) error {
	if req.Status == "" {
		return nil
	}
	if err := ValidateStatus(req.Status); err != nil {
		return badRequest("%v", err)
	}
	return nil
}

// ValidateList checks a presence query and sets its default scope
// (project).
func ValidateList(req *ListRequest) error {
	if req.Scope == "" {
		req.Scope = "project"
	}
	if req.Scope != "project" && req.Scope != "all" {
		return badRequest("invalid scope %q: want project or all", req.Scope)
	}
	return nil
}

// ValidateAck checks an acknowledgement: a session and 1-MaxAckIDs ids.
func ValidateAck(req AckRequest) error {
	if req.SessionID == "" || len(req.IDs) == 0 || len(req.IDs) > MaxAckIDs {
		return badRequest("ack: session and 1-%d ids are required", MaxAckIDs)
	}
	return nil
}

// ValidateAskWait checks the re-registration of an ask's waiter.
func ValidateAskWait(req AskWaitRequest) error {
	if req.AskID == "" || req.WaitSubject == "" || req.SessionID == "" || req.To == "" {
		return badRequest("askwait: session, ask id, target and wait subject are required")
	}
	return nil
}

// ValidateInboxWait checks a wait for mail.
func ValidateInboxWait(req InboxWaitRequest) error {
	if req.SessionID == "" {
		return badRequest("inboxwait: session required")
	}
	return nil
}
