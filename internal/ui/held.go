package ui

// The held view: messages a session's inbound setting holds for a
// person's decision (docs/concepts.md, "Holding inbound messages"); the
// person approves (a) or refuses (x) the selected one.

import (
	"context"
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/intercom-dev/intercom/internal/render"
	"github.com/intercom-dev/intercom/pkg/wire"
)

type decidedMsg struct {
	reply wire.HeldDecideReply
	err   error
}

// decideCmd approves or refuses held message id as the UI's session.
func (m *Model) decideCmd(id string, approve bool) tea.Cmd {
	c, by, ctx := m.o.Client, m.self.ID, m.ctx
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		res, err := c.DecideHeld(ctx, by, id, approve)
		return decidedMsg{res, err}
	}
}

func (m *Model) decided(msg decidedMsg) tea.Cmd {
	if msg.err != nil {
		m.flash(true, "%v", msg.err)
		return nil
	}
	m.flash(false, "Message %s %s (to %s).", msg.reply.ID, msg.reply.Decision, msg.reply.To)
	if m.refreshing {
		return nil
	}
	m.refreshing = true
	return m.refreshCmd()
}

func (m *Model) heldKey(k tea.KeyPressMsg) tea.Cmd {
	switch {
	case is(k, "up", "k"):
		m.sel = clamp(m.sel-1, 0, len(m.held)-1)
	case is(k, "down", "j"):
		m.sel = clamp(m.sel+1, 0, len(m.held)-1)
	case is(k, "esc"):
		m.view = viewSessions
	case is(k, "a", "x"):
		if m.sel >= len(m.held) {
			return nil
		}
		return m.decideCmd(m.held[m.sel].Message.ID, is(k, "a"))
	}
	return nil
}

func (m *Model) heldBody(h int) []string {
	out := []string{m.st.dim.Render("Messages held for your approval (oldest first): a approves, x refuses")}
	if len(m.held) == 0 {
		return append(out, m.st.dim.Render("  (none held)"))
	}
	start := max(0, m.sel-(h-2)/2)
	for i := start; i < len(m.held) && len(out) < h; i++ {
		hm := m.held[i]
		mark := " "
		if i == m.sel {
			mark = "▸"
		}
		line := fmt.Sprintf("%s %s → %s · %s · %s", mark, render.SenderName(hm.Message), render.Line(hm.ToName), hm.Message.ID, ago(hm.HeldAt))
		if i == m.sel {
			line = m.st.selected.Render(line)
		}
		out = append(out, line, "    "+oneLine(render.OneLine(hm.Message.Text)))
	}
	return out
}
