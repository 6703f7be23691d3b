package agentsession

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/intercom-dev/intercom/internal/render"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Progress records a message being handed over in parts: Next is the
// 0-based part to hand over next, of Parts.
type Progress struct {
	ID    string `json:"id"`
	Next  int    `json:"next"`
	Parts int    `json:"parts"`
}

// Batch is what one hand-over carries.
type Batch struct {
	Text string
	// Ack lists the messages this hand-over completes: rendered whole, or
	// their last part. Only these may be acknowledged once it is written.
	Ack []string
	// Progress is the message still being handed over in parts after this
	// hand-over (nil when none).
	Progress *Progress
	// Waiting counts the messages left for a later boundary.
	Waiting int
}

// room is what a batch keeps free for its head and digest lines.
const room = render.DigestRoom

// compose fills one hand-over of at most limit bytes with msgs (what pick
// chose, oldest first) as one digest (render.BuildDigest: by priority,
// each whole, what does not fit waits for the next hand-over). A message
// bigger than a whole hand-over goes in numbered parts, one per hand-over,
// and completes (is acknowledged) with its last part. prog is the part
// delivery in flight, if any: msgs[0] is its message, and its next part
// goes alone. supervisor is the reader's supervisor session ("" for none).
func compose(msgs []wire.Message, o DeliverOptions, prog *Progress) Batch {
	if len(msgs) == 0 {
		return Batch{}
	}
	if prog != nil {
		m := msgs[0]
		b := part(m, o.Render(m), prog.Next, o.Limit)
		b.Waiting = len(msgs) - 1
		if b.Progress == nil && b.Text != "" {
			b.Text += render.WaitingLine(b.Waiting)
		}
		return b
	}
	d := render.BuildDigest(msgs, render.DigestOptions{Render: o.Render, Budget: o.Limit, Supervisor: o.Supervisor})
	if d.Oversize != nil { // bigger than a whole hand-over: its first part, alone
		out := part(*d.Oversize, o.Render(*d.Oversize), 0, o.Limit)
		out.Waiting = d.Waiting
		return out
	}
	return Batch{Text: d.Text, Ack: d.Shown, Waiting: d.Waiting}
}

// part is answer k (0-based) of message m, whose rendering is text.
func part(m wire.Message, text string, k, limit int) Batch {
	chunks := split(text, limit-room)
	if k >= len(chunks) { // the rendering shrank since the last part: done
		return Batch{Ack: []string{m.ID}}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "intercom: message %s from %s, part %d of %d:\n", m.ID, m.From.Name, k+1, len(chunks))
	b.WriteString(chunks[k])
	if k+1 < len(chunks) {
		fmt.Fprintf(&b, "\n[part %d of %d ends here; part %d comes at the next tool boundary]\n", k+1, len(chunks), k+2)
		return Batch{Text: b.String(), Progress: &Progress{ID: m.ID, Next: k + 1, Parts: len(chunks)}}
	}
	fmt.Fprintf(&b, "\n[end of message %s]\n", m.ID)
	return Batch{Text: b.String(), Ack: []string{m.ID}}
}

// split cuts text into pieces of at most size bytes, at UTF-8 boundaries,
// preferring a line break in the last quarter of a piece. Joined, the
// pieces are text again.
func split(text string, size int) []string {
	size = max(size, 64)
	var out []string
	for len(text) > size {
		cut := size
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		if cut == 0 { // not UTF-8: cut anywhere
			cut = size
		}
		if nl := strings.LastIndexByte(text[:cut], '\n'); nl >= cut*3/4 {
			cut = nl + 1
		}
		out = append(out, text[:cut])
		text = text[cut:]
	}
	if text != "" || len(out) == 0 {
		out = append(out, text)
	}
	return out
}
