package ui

// Per-peer conversations: what arrived and what was sent, unread counts and
// unanswered asks.

import (
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// convo is the history with one peer.
type convo struct {
	peer   wire.Peer
	items  []item
	unread int
	last   time.Time
}

type item struct {
	in  bool // received (else sent by us)
	msg wire.Message
}

// receive files an arriving message under its sender's conversation.
func (m *Model) receive(msg wire.Message) {
	cv := m.convo(msg.From)
	cv.items = append(cv.items, item{in: true, msg: msg})
	cv.last = time.Now()
	viewing := m.view == viewThread && m.currentPeer() == msg.From.ID
	if !viewing {
		cv.unread++
	}
	if msg.ExpectsReply && msg.ReplyTo == "" {
		// Shown as unanswered at once; the next refresh confirms it.
		m.pending[msg.ID] = wire.PendingAsk{AskID: msg.ID, From: msg.From, Text: msg.Text, SentAt: msg.SentAt}
	}
	m.touch(msg.From.ID)
	kind := "message"
	if msg.ExpectsReply {
		kind = "ask"
	}
	if msg.Topic != "" {
		kind = "topic " + msg.Event
	}
	if !viewing {
		m.flash(false, "New %s from %s — %s opens conversations", kind, msg.From.Name, m.o.Shortcut)
	}
}

func (m *Model) convo(p wire.Peer) *convo {
	cv := m.convos[p.ID]
	if cv == nil {
		cv = &convo{peer: p}
		m.convos[p.ID] = cv
		m.order = append(m.order, p.ID)
	}
	if p.Name != "" {
		cv.peer.Name = p.Name
	}
	if p.Cwd != "" {
		cv.peer.Cwd = p.Cwd
	}
	return cv
}

// touch moves a peer to the top of the conversation list, keeping the
// cursor on the peer it was on.
func (m *Model) touch(id string) {
	cur := m.currentPeer()
	out := []string{id}
	for _, p := range m.order {
		if p != id {
			out = append(out, p)
		}
	}
	m.order = out
	for i, p := range m.order {
		if p == cur {
			m.peerSel = i
		}
	}
}

func (m *Model) currentPeer() string {
	if m.peerSel >= 0 && m.peerSel < len(m.order) {
		return m.order[m.peerSel]
	}
	return ""
}

// unansweredFrom returns the newest unresolved ask from a peer.
func (m *Model) unansweredFrom(peer string) (wire.Message, bool) {
	cv := m.convos[peer]
	if cv != nil {
		for i := len(cv.items) - 1; i >= 0; i-- {
			it := cv.items[i]
			if _, ok := m.pending[it.msg.ID]; ok && it.in {
				return it.msg, true
			}
		}
	}
	// Asks received before the UI started are known only from pending.
	var best *wire.PendingAsk
	for _, a := range m.pending {
		if a.From.ID == peer && (best == nil || a.SentAt.After(best.SentAt)) {
			a := a
			best = &a
		}
	}
	if best != nil {
		return wire.Message{ID: best.AskID, From: best.From, Text: best.Text, SentAt: best.SentAt, ExpectsReply: true}, true
	}
	return wire.Message{}, false
}

func (m *Model) sent(msg sentMsg) tea.Cmd {
	if m.compose != nil {
		m.compose.sending = false
	}
	if msg.err != nil {
		m.flash(true, "send failed: %v", msg.err)
		return nil
	}
	to := msg.reply.To
	cv := m.convo(wire.Peer{ID: to.ID, Name: to.Name, Cwd: to.Cwd})
	out := wire.Message{ID: msg.reply.ID, From: wire.Peer{ID: m.self.ID, Name: m.self.Name}, To: to.ID,
		Text: msg.req.Text, ExpectsReply: msg.req.ExpectsReply, ReplyTo: msg.req.ReplyTo,
		Attachments: msg.req.Attachments, SentAt: time.Now()}
	cv.items = append(cv.items, item{msg: out})
	cv.last = time.Now()
	m.touch(to.ID)
	if msg.req.ReplyTo != "" {
		delete(m.pending, msg.req.ReplyTo)
	}
	m.compose = nil
	what := "Sent to"
	switch {
	case msg.req.ReplyTo != "":
		what = "Replied to"
	case msg.req.ExpectsReply:
		what = "Asked (reply requested)"
	}
	extra := ""
	switch {
	case msg.reply.Offline:
		extra = " (offline: stored in its inbox)"
	case msg.reply.PeerBusy:
		extra = " (busy: it will see it at its next turn)"
	}
	m.flash(false, "%s %s%s", what, to.Target, extra)
	m.refreshing = true
	return m.refreshCmd()
}
