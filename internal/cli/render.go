package cli

import (
	"fmt"
	"time"

	"github.com/intercom-dev/intercom/internal/presence"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// messageJSON is the documented --json shape of a delivered message.
type messageJSON struct {
	Event        string            `json:"event"`
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
}

func toJSON(m wire.Message) messageJSON {
	att := m.Attachments
	if att == nil {
		att = []wire.Attachment{}
	}
	j := messageJSON{Event: "message", ID: m.ID, Seq: m.Seq, From: m.From, Text: m.Text, Delivery: m.Delivery,
		ExpectsReply: m.ExpectsReply, ReplyTo: m.ReplyTo, Thread: m.Thread, Attachments: att, SentAt: m.SentAt,
		Topic: m.Topic, Resource: m.Resource, Ownership: m.Ownership}
	if m.Topic != "" {
		j.Event = m.Event // topic wake-ups carry their topic event: blocker, decision, release
	}
	return j
}

func resolveSession(rows []*wire.Session, target string) (*wire.Session, error) {
	return presence.Resolve(rows, target, "")
}

// replyHint is the line shown under an incoming ask, or "" when the
// replyHint config is off.
func (e *env) replyHint(self string, m wire.Message) string {
	if !e.cfg.ReplyHint {
		return ""
	}
	sess := ""
	if self != "" {
		sess = " --session " + self
	}
	return fmt.Sprintf("To reply: intercom%s reply --to %s \"...\"", sess, m.ID)
}
