package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
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

// tildify shortens a path under $HOME to ~/….
func tildify(p string) string {
	if h, err := os.UserHomeDir(); err == nil && h != "/" && (p == h || strings.HasPrefix(p, h+"/")) {
		return "~" + p[len(h):]
	}
	return p
}

// renderMessage prints a message as a person or agent reads it: sender and
// cwd, the reply hint for asks, then the body and attachments.
func renderMessage(w io.Writer, m wire.Message, self string, replyHint bool) {
	if m.Topic != "" {
		own := ""
		if m.Resource != "" {
			own = fmt.Sprintf(" · resource %s %s", m.Resource, m.Ownership)
		}
		fmt.Fprintf(w, "**Topic %s — %s from %s**%s [id %s · %s]\n\n%s\n\n", m.Topic, m.Event, m.From.Name, own, m.ID, m.SentAt.Local().Format("15:04:05"), strings.TrimRight(m.Text, "\n"))
		return
	}
	mode := m.Delivery
	if m.ReplyTo != "" {
		mode += ", reply to " + m.ReplyTo
	}
	fmt.Fprintf(w, "**From %s** (Native session cwd: %s) [%s · id %s · %s]\n", m.From.Name, tildify(m.From.Cwd), mode, m.ID, m.SentAt.Local().Format("15:04:05"))
	if m.ExpectsReply && replyHint {
		sess := ""
		if self != "" {
			sess = " --session " + self
		}
		fmt.Fprintf(w, "\nTo reply: intercom%s reply --to %s \"...\"\n", sess, m.ID)
	}
	fmt.Fprintf(w, "\n%s\n", strings.TrimRight(m.Text, "\n"))
	for _, a := range m.Attachments {
		label := a.Name
		if a.Language != "" {
			label += " (" + a.Language + ")"
		}
		if a.Path != "" {
			label += " from " + a.Path
		}
		fmt.Fprintf(w, "\n--- %s: %s (%d bytes) ---\n%s\n--- end %s ---\n", a.Type, label, len(a.Content), strings.TrimRight(a.Content, "\n"), a.Name)
	}
	fmt.Fprintln(w)
}

func ago(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "none"
	}
	d := time.Since(*t).Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}

// renderSessions prints list/status rows with health tags and guidance.
func renderSessions(w io.Writer, rows []wire.Session) {
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
			renderRow(w, r)
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
		renderRow(w, r)
		fmt.Fprintln(w, "  ↳ "+guidance(r))
	}
}

func renderRow(w io.Writer, r wire.Session) {
	label := r.Name
	if r.Target != r.Name {
		label += " (" + r.Target + ")"
	} else {
		label += " (" + r.ID[:min(8, len(r.ID))] + ")"
	}
	model := ""
	if r.Model != "" {
		model = " (" + r.Model + ")"
	}
	tags := []string{}
	if r.Self {
		tags = append(tags, "self")
	}
	status := r.Status
	if !r.Connected {
		status = "disconnected"
	}
	tags = append(tags, status, "state:"+r.State,
		fmt.Sprintf("accepts_asks:%t", r.AcceptsAsks), fmt.Sprintf("pending_asks:%d", r.PendingAsks),
		"last_intercom_activity:"+ago(r.LastIntercomActivity), "last_seen:"+ago(&r.LastSeen))
	fmt.Fprintf(w, "• %s — %s%s [%s]\n", label, tildify(r.Cwd), model, strings.Join(tags, ", "))
}

func guidance(r wire.Session) string {
	if !r.Connected {
		return "offline: send stores the message in its inbox until it resumes; ask is refused (peer_offline)"
	}
	if !r.AcceptsAsks {
		return "send defaults to steer (reaches it at the next tool boundary); ask returns peer_busy unless --delivery steer; queue waits until idle; passive discouraged"
	}
	return "send defaults to steer; ask only if you must stay alive for a required reply; queue only for intentional delay; passive discouraged"
}

func resolveSession(rows []*wire.Session, target string) (*wire.Session, error) {
	return presence.Resolve(rows, target, "")
}
