// Package render formats sessions and messages for people and agents, the
// same way in the CLI, the MCP server and the hooks.
package render

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// tildify shortens a path under $HOME to ~/….
func Tildify(p string) string {
	if h, err := os.UserHomeDir(); err == nil && h != "/" && (p == h || strings.HasPrefix(p, h+"/")) {
		return "~" + p[len(h):]
	}
	return p
}

// Message prints a message as a person or agent reads it: sender and
// cwd, the reply hint for asks, then the body and attachments. Every field
// is escaped (Line, Text); a sender on another machine is shown as
// name@host in the header line, and its body cannot fake another header.
func Message(w io.Writer, m wire.Message, hint string) {
	body := func(s string) string { return Body(m.From, s) }
	at := m.SentAt.Local().Format("15:04:05")
	if m.Topic != "" {
		own := ""
		if m.Resource != "" {
			own = fmt.Sprintf(" · resource %s %s", Line(m.Resource), Line(m.Ownership))
		}
		fmt.Fprintf(w, "**Topic %s — %s from %s**%s [id %s · %s]\n\n%s\n\n", Line(m.Topic), Line(m.Event), Line(m.From.Name), own, Line(m.ID), at, body(strings.TrimRight(m.Text, "\n")))
		return
	}
	mode := m.Delivery
	if m.ReplyTo != "" {
		mode += ", reply to " + m.ReplyTo
	}
	fmt.Fprintf(w, "**From %s** (Native session cwd: %s) [%s · id %s · %s]\n", SenderName(m), Line(Tildify(m.From.Cwd)), Line(mode), Line(m.ID), at)
	if m.ExpectsReply && hint != "" {
		fmt.Fprintf(w, "\n%s\n", hint)
	}
	fmt.Fprintf(w, "\n%s\n", body(strings.TrimRight(m.Text, "\n")))
	if note := wakeHeldReaderNote(m); note != "" {
		fmt.Fprintf(w, "\n(%s)\n", note)
	}
	for _, a := range m.Attachments {
		label := a.Name
		if a.Language != "" {
			label += " (" + a.Language + ")"
		}
		if a.Path != "" {
			label += " from " + a.Path
		}
		fmt.Fprintf(w, "\n--- %s: %s (%d bytes) ---\n%s\n--- end %s ---\n", Line(a.Type), Line(label), len(a.Content), body(strings.TrimRight(a.Content, "\n")), Line(a.Name))
	}
	fmt.Fprintln(w)
}

// SenderName is how a message's sender is named in its header: "person
// NAME" when the broker marked it from a person (wire.Message.FromPerson);
// an agent whose own name starts with "person " is quoted, so that no
// name can pass for the mark.
func SenderName(m wire.Message) string {
	name := Line(m.From.Name)
	switch {
	case m.FromPerson:
		return "person " + name
	case strings.HasPrefix(strings.ToLower(name), "person "):
		return fmt.Sprintf("%q", name)
	}
	return name
}

func Ago(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "none"
	}
	return Span(time.Since(*t).Round(time.Second)) + " ago"
}

// Sessions prints list/status rows with health tags and guidance.
func Sessions(w io.Writer, rows []wire.Session) {
	var self, others []wire.Session
	for _, r := range rows {
		if r.Self {
			self = append(self, r)
		} else {
			others = append(others, r)
		}
	}
	if len(self) > 0 {
		fmt.Fprintln(w, "Current session:")
		for _, r := range self {
			row(w, r)
			fmt.Fprintln(w, "  ↳ self target unavailable; choose a peer from Other sessions; use pending/reply for inbound asks")
		}
		fmt.Fprintln(w, "Other sessions:")
	} else {
		fmt.Fprintln(w, "Sessions:")
	}
	if len(others) == 0 {
		fmt.Fprintln(w, "  (none)")
	}
	for _, r := range others {
		row(w, r)
		fmt.Fprintln(w, "  ↳ "+Guidance(r))
	}
}

func row(w io.Writer, r wire.Session) {
	label := r.Name
	if r.Target != r.Name {
		label += " (" + r.Target + ")"
	} else {
		label += " (" + r.ID[:min(8, len(r.ID))] + ")"
	}
	label = Line(label)
	model := ""
	if r.Model != "" {
		model = " (" + Line(r.Model) + ")"
	}
	tags := []string{}
	if r.Self {
		tags = append(tags, "self")
	}
	if r.Person {
		tags = append(tags, "person")
	}
	tags = append(tags, ShownStatus(r), "state:"+r.State,
		fmt.Sprintf("accepts_asks:%t", r.AcceptsAsks), fmt.Sprintf("pending_asks:%d", r.PendingAsks),
		"last_intercom_activity:"+Ago(r.LastIntercomActivity), "last_seen:"+Ago(&r.LastSeen))
	if r.WakePaused != "" {
		tags = append(tags, "wake_paused_with:"+r.WakePaused)
	}
	fmt.Fprintf(w, "• %s — %s%s [%s]\n", label, Line(Tildify(r.Cwd)), model, Line(strings.Join(tags, ", ")))
}

// ShownStatus is a row's status as a person reads it: "unreachable" for a
// session of a bridged host whose link is down, "disconnected" for one not
// connected, "stuck 4m (tool:bash)" for a stuck one, else what it reported.
func ShownStatus(r wire.Session) string {
	switch {
	case r.State == wire.StateUnreachable:
		return wire.StateUnreachable
	case !r.Connected:
		return wire.StateDisconnected
	case !r.StuckSince.IsZero():
		return Stuck(r) + " (" + r.Status + ")"
	}
	return r.Status
}

func Guidance(r wire.Session) string {
	if r.State == wire.StateUnreachable {
		return "unreachable: the link to its host is down; send waits in the outbox until the link heals; ask is refused (peer_offline)"
	}
	if !r.Connected {
		return "offline: send stores the message in its inbox until it resumes; ask is refused (peer_offline)"
	}
	if !r.AcceptsAsks {
		return "send defaults to steer (reaches it at the next tool boundary); ask returns peer_busy unless --delivery steer; queue waits until idle; passive discouraged"
	}
	return "send defaults to steer; ask only if you must stay alive for a required reply; queue only for intentional delay; passive discouraged"
}

// TopicRecord is one record of `topics` as a line: "  • sender (event, ago)
// [resource ownership]: message" (the caller may shorten the message; its
// line breaks are escaped, so that it stays one line).
func TopicRecord(r wire.TopicRecord, message string) string {
	own := ""
	if r.Resource != "" {
		own = fmt.Sprintf(" [%s %s]", Line(r.Resource), Line(r.Ownership))
	}
	at := r.PublishedAt
	return fmt.Sprintf("  • %s (%s, %s)%s: %s", Line(r.From.Name), Line(r.Event), Ago(&at), own, Line(message))
}

// Subscribers lists a topic's subscribers ("a, b (await-release)"), "" for none.
func Subscribers(subs []wire.TopicSubscriber) string {
	names := make([]string, 0, len(subs))
	for _, s := range subs {
		n := Line(s.Name)
		if s.AwaitRelease {
			n += " (await-release)"
		}
		names = append(names, n)
	}
	return strings.Join(names, ", ")
}
