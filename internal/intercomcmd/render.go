package intercomcmd

import (
	"fmt"

	"mvdan.cc/sh/v3/syntax"

	"github.com/intercom-dev/intercom/internal/schema"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// toJSON is the documented --json shape of a delivered message.
func toJSON(m wire.Message) schema.Message {
	att := m.Attachments
	if att == nil {
		att = []wire.Attachment{}
	}
	j := schema.Message{Event: "message", ID: m.ID, Seq: m.Seq, From: m.From, Text: m.Text, Delivery: m.Delivery,
		ExpectsReply: m.ExpectsReply, ReplyTo: m.ReplyTo, Thread: m.Thread, Attachments: att, SentAt: m.SentAt,
		Topic: m.Topic, Resource: m.Resource, Ownership: m.Ownership, WakeHeld: m.WakeHeld, FromPerson: m.FromPerson}
	if m.Topic != "" {
		j.Event = m.Event // topic wake-ups carry their topic event: blocker, decision, release
	}
	return j
}

// fromJSON is toJSON undone: the message an extension sent back (digest).
func fromJSON(j schema.Message) wire.Message {
	m := wire.Message{ID: j.ID, Seq: j.Seq, From: j.From, Text: j.Text, Delivery: j.Delivery,
		ExpectsReply: j.ExpectsReply, ReplyTo: j.ReplyTo, Thread: j.Thread, Attachments: j.Attachments, SentAt: j.SentAt,
		Topic: j.Topic, Resource: j.Resource, Ownership: j.Ownership, WakeHeld: j.WakeHeld, FromPerson: j.FromPerson}
	if j.Topic != "" {
		m.Event = j.Event
	}
	return m
}

// messagesJSON is the --json shape of inbox and wait.
func messagesJSON(msgs []wire.Message) schema.Messages {
	rows := make([]schema.Message, 0, len(msgs))
	for _, m := range msgs {
		rows = append(rows, toJSON(m))
	}
	return schema.Messages{Messages: rows}
}

// replyHint is the line shown under an incoming ask, or "" when the
// replyHint config is off.
func (e *env) replyHint(self string, m wire.Message) string {
	if !e.cfg.ReplyHint {
		return ""
	}
	sess := ""
	if self != "" {
		sess = " --session " + shellQuote(self)
	}
	return fmt.Sprintf("To reply: intercom%s reply --to %s \"...\"", sess, m.ID)
}

// shellQuote makes s safe to paste into a shell command line (names may
// hold spaces and other characters a shell interprets).
func shellQuote(s string) string {
	q, err := syntax.Quote(s, syntax.LangPOSIX)
	if err != nil {
		return s
	}
	return q
}
