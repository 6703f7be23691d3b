package ui

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/textarea"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/intercom-dev/intercom/internal/render"
	"github.com/intercom-dev/intercom/internal/runs"
	"github.com/intercom-dev/intercom/pkg/wire"
)

func plainTextareaStyles() textarea.Styles {
	return textarea.Styles{Cursor: textarea.CursorStyle{Shape: tea.CursorBlock}}
}

func plainTextinputStyles() textinput.Styles {
	return textinput.Styles{Cursor: textinput.CursorStyle{Shape: tea.CursorBlock}}
}

// View renders the screen: a header, the body of the current view, a
// status line and the help bar, never more than the terminal's size.
func (m *Model) View() tea.View {
	content, cursor := m.render()
	v := tea.NewView(content)
	v.AltScreen = true
	v.Cursor = cursor
	v.WindowTitle = "intercom ui — " + m.self.Name
	return v
}

// Screen is the rendered text of the current frame (what View shows).
func (m *Model) Screen() string {
	s, _ := m.render()
	return s
}

func (m *Model) render() (string, *tea.Cursor) {
	bodyH := max(1, m.h-3)
	var body []string
	var cursor *tea.Cursor
	switch {
	case m.compose != nil:
		body, cursor = m.composeBody(bodyH)
	case m.view == viewSessions:
		body = m.sessionsBody(bodyH)
	case m.view == viewConvos:
		body = m.convosBody(bodyH)
	case m.view == viewThread:
		body = m.threadBody(bodyH)
	case m.view == viewTopics:
		body = m.topicsBody(bodyH)
	case m.view == viewRuns:
		body = m.runsBody(bodyH)
	case m.view == viewHeld:
		body = m.heldBody(bodyH)
	}
	if len(body) > bodyH {
		body = body[:bodyH]
	}
	for len(body) < bodyH {
		body = append(body, "")
	}
	lines := append([]string{m.headerLine()}, body...)
	lines = append(lines, m.statusLine(), m.helpLine())
	for i, l := range lines {
		lines[i] = ansi.Truncate(l, m.w, "…")
	}
	if cursor != nil {
		cursor.Position.Y++ // below the header
	}
	return strings.Join(lines, "\n"), cursor
}

func (m *Model) headerLine() string {
	tabs := []struct {
		v    view
		name string
	}{{viewSessions, "1 Sessions"}, {viewConvos, "2 Conversations"}, {viewTopics, "3 Topics"}, {viewRuns, "4 Runs"}, {viewHeld, "5 Held"}}
	unread := 0
	for _, cv := range m.convos {
		unread += cv.unread
	}
	var parts []string
	for _, t := range tabs {
		name := t.name
		if t.v == viewConvos && unread > 0 {
			name += fmt.Sprintf("(%d)", unread)
		}
		if t.v == viewRuns && len(m.runs) == 0 && m.view != viewRuns {
			continue
		}
		if t.v == viewHeld && len(m.held) == 0 && m.view != viewHeld {
			continue
		}
		if t.v == viewHeld {
			name += fmt.Sprintf("(%d)", len(m.held))
		}
		on := m.view == t.v || (t.v == viewConvos && m.view == viewThread)
		if on {
			parts = append(parts, m.st.tabOn.Render("["+name+"]"))
		} else {
			parts = append(parts, m.st.tabOff.Render(" "+name+" "))
		}
	}
	return m.st.title.Render("intercom · "+m.self.Name) + "  " + strings.Join(parts, "")
}

func (m *Model) statusLine() string {
	switch {
	case m.status != "" && m.isErr:
		return m.st.err.Render("! " + m.status)
	case m.status != "":
		return m.st.ok.Render(m.status)
	case m.lastErr != "":
		return m.st.err.Render("! broker: " + m.lastErr)
	}
	return ""
}

func (m *Model) helpLine() string {
	var h string
	switch {
	case m.compose != nil && m.compose.attaching:
		h = "enter attach · esc back"
	case m.compose != nil && m.compose.runID != "":
		h = "enter send answer · alt+enter/ctrl+j newline · esc cancel"
	case m.compose != nil:
		h = "enter send · alt+enter/ctrl+j newline · tab send/request reply · ctrl+a attach · esc cancel"
	case m.view == viewSessions:
		h = "↑↓ select · enter compose · r reply · a all/project · " + m.o.Shortcut + " agents · t topics · q quit"
	case m.view == viewConvos:
		h = "↑↓ select · enter open · r reply · esc/" + m.o.Shortcut + " close · q quit"
	case m.view == viewThread:
		h = "↑↓ scroll · r reply · enter message · x attachments · esc back"
	case m.view == viewTopics:
		h = "↑↓ scroll · 1 sessions · 2 conversations · 4 runs · q quit"
	case m.view == viewRuns:
		h = "↑↓ select · enter answer question · 1 sessions · q quit"
	case m.view == viewHeld:
		h = "↑↓ select · a approve · x refuse · 1 sessions · q quit"
	}
	return m.st.help.Render(h)
}

// --- sessions ---

const sessFmt = "%-2s%-16s %-16s %-12s %-8s %5s %-10s"

func (m *Model) sessionsBody(h int) []string {
	scope := "this project"
	if m.scopeAll {
		scope = "all projects"
	}
	out := []string{m.st.dim.Render(fmt.Sprintf("Sessions — %s (a toggles)", scope)),
		m.st.header.Render(fmt.Sprintf(sessFmt, "", "NAME", "TARGET", "STATUS", "STATE", "ASKS", "ACTIVITY"))}
	if len(m.sessions) == 0 {
		return append(out, m.st.dim.Render("  (no other sessions)"))
	}
	rows := h - len(out)
	start := max(0, m.sel-rows+1)
	for i := start; i < len(m.sessions) && len(out) < h; i++ {
		s := m.sessions[i]
		status := render.ShownStatus(s)
		mark := " "
		if i == m.sel {
			mark = "▸"
		}
		asks := fmt.Sprint(s.PendingAsks)
		if _, ok := m.unansweredFrom(s.ID); ok {
			asks = "!" + asks // it waits on us
		}
		line := fmt.Sprintf(sessFmt, mark, cut(s.Name, 16), cut(s.Target, 16), cut(status, 12), cut(render.ShownState(s), 8), asks, render.Ago(s.LastIntercomActivity))
		switch {
		case i == m.sel:
			line = m.st.selected.Render(line)
		case !s.Connected:
			line = m.st.dim.Render(line)
		}
		out = append(out, line)
	}
	if m.sel < len(m.sessions) && len(out) < h {
		s := m.sessions[m.sel]
		out = append(out, "", m.st.dim.Render("  "+render.Line(render.Tildify(s.Cwd)+modelLabel(s)+m.holdsLabel(s.ID)+wakePausedLabel(s))))
	}
	return out
}

// wakePausedLabel tells a person the loop breaker paused s's wake-ups
// with other sessions (docs/concepts.md, "Attention").
func wakePausedLabel(s wire.Session) string {
	if s.WakePaused == "" {
		return ""
	}
	return " · wake-ups paused with " + s.WakePaused + " (loop breaker; a person's message resumes them)"
}

func modelLabel(s wire.Session) string {
	if s.Model == "" {
		return ""
	}
	return " (" + s.Model + ")"
}

// cut shortens s, escaped (render.Line), to n cells.
func cut(s string, n int) string {
	s = render.Line(s)
	if ansi.StringWidth(s) <= n {
		return s
	}
	return ansi.Truncate(s, n, "…")
}

// --- conversations ---

func (m *Model) convosBody(h int) []string {
	out := []string{m.st.dim.Render("Conversations (newest first; ! = ask waiting for your reply)")}
	if len(m.order) == 0 {
		return append(out, m.st.dim.Render("  (no messages yet)"))
	}
	start := max(0, m.peerSel-(h-2))
	for i := start; i < len(m.order) && len(out) < h; i++ {
		cv := m.convos[m.order[i]]
		mark := " "
		if i == m.peerSel {
			mark = "▸"
		}
		flags := ""
		if cv.unread > 0 {
			flags += m.st.unread.Render(fmt.Sprintf(" %d unread", cv.unread))
		}
		if _, ok := m.unansweredFrom(cv.peer.ID); ok {
			flags += m.st.ask.Render(" ! ask unanswered")
		}
		last := ""
		if n := len(cv.items); n > 0 {
			last = oneLine(cv.items[n-1].msg.Text)
		}
		name := fmt.Sprintf("%s %-16s", mark, cut(cv.peer.Name, 16))
		if i == m.peerSel {
			name = m.st.selected.Render(name)
		}
		out = append(out, name+flags+m.st.dim.Render("  "+cut(last, 40)))
	}
	return out
}

// oneLine is the first line of s, escaped (render.Line).
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	return render.Line(s)
}

// threadBody shows the conversation with the selected peer, newest at the
// bottom, scrolled by m.scroll lines.
func (m *Model) threadBody(h int) []string {
	p := m.currentPeer()
	cv := m.convos[p]
	if cv == nil {
		return []string{"(no conversation)"}
	}
	head := render.Line(fmt.Sprintf("Conversation with %s (%s)", cv.peer.Name, render.Tildify(cv.peer.Cwd)))
	var lines []string
	for _, it := range cv.items {
		lines = append(lines, m.messageLines(it)...)
	}
	var wrapped []string
	for _, l := range lines {
		wrapped = append(wrapped, wrapLine(l, m.w)...)
	}
	top := []string{m.st.header.Render(head)}
	if ask, ok := m.unansweredFrom(p); ok {
		// Pinned: a long history must not scroll an open ask out of sight.
		top = append(top, m.st.ask.Render("! ASK, NOT ANSWERED: "+cut(oneLine(ask.Text), 40)+" — r replies"))
	}
	rows := h - len(top)
	end := max(0, len(wrapped)-m.scroll)
	m.scroll = len(wrapped) - end
	start := max(0, end-rows)
	return append(top, wrapped[start:end]...)
}

func wrapLine(l string, w int) []string {
	if ansi.StringWidth(l) <= w {
		return []string{l}
	}
	return strings.Split(ansi.Wrap(l, w, ""), "\n")
}

// messageLines renders one message as `attach` prints it (sender, cwd, the
// reply hint for asks, body, attachments), with attachments collapsed to
// one line each unless expanded with x.
func (m *Model) messageLines(it item) []string {
	msg := it.msg
	if !it.in {
		kind := "You"
		switch {
		case msg.ReplyTo != "":
			kind = "You replied"
		case msg.ExpectsReply:
			kind = "You asked (reply requested)"
		}
		out := []string{m.st.dim.Render(fmt.Sprintf("── %s · %s", kind, msg.SentAt.Local().Format("15:04:05")))}
		out = append(out, strings.Split(strings.TrimRight(msg.Text, "\n"), "\n")...)
		out = append(out, m.attachmentLines(msg.Attachments)...)
		return append(out, "")
	}
	_, waiting := m.pending[msg.ID]
	hint := ""
	if msg.ExpectsReply && waiting {
		hint = "To reply, press r."
	}
	short := msg
	short.Attachments = nil
	var b bytes.Buffer
	render.Message(&b, short, hint)
	out := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if msg.ExpectsReply {
		if waiting {
			out[0] = m.st.ask.Render("! " + out[0] + " — ASK, NOT ANSWERED")
		} else {
			out[0] = out[0] + " — ask (answered)"
		}
	}
	out = append(out, m.attachmentLines(msg.Attachments)...)
	return append(out, "")
}

func (m *Model) attachmentLines(atts []wire.Attachment) []string {
	var out []string
	for _, a := range atts {
		label := a.Name
		if a.Language != "" {
			label += " (" + a.Language + ")"
		}
		if a.Path != "" {
			label += " from " + render.Tildify(a.Path)
		}
		label = render.Line(label)
		if !m.expand {
			out = append(out, m.st.dim.Render(fmt.Sprintf("[%s: %s, %d bytes — x expands]", render.Line(a.Type), label, len(a.Content))))
			continue
		}
		out = append(out, fmt.Sprintf("--- %s: %s (%d bytes) ---", render.Line(a.Type), label, len(a.Content)))
		out = append(out, strings.Split(render.Text(strings.TrimRight(a.Content, "\n")), "\n")...)
		out = append(out, "--- end "+render.Line(a.Name)+" ---")
	}
	return out
}

// --- topics ---

func (m *Model) topicsBody(h int) []string {
	var lines []string
	if len(m.topics) == 0 {
		lines = append(lines, m.st.dim.Render("No topic state."))
	}
	for _, ti := range m.topics {
		lines = append(lines, m.st.header.Render("Topic "+render.Line(ti.Topic)))
		for _, r := range ti.Resources {
			holder := ""
			if r.Holder != nil {
				holder = " by " + r.Holder.Name
			}
			line := render.Line(fmt.Sprintf("  resource %s: %s%s", r.Resource, r.State, holder))
			if r.State == wire.OwnershipUnavailable {
				line = m.st.ask.Render(line + " (holder disconnected; not released)")
			}
			lines = append(lines, line)
		}
		for _, r := range ti.Records {
			lines = append(lines, render.TopicRecord(r, oneLine(r.Message)))
		}
		if subs := render.Subscribers(ti.Subscribers); subs != "" {
			lines = append(lines, m.st.dim.Render("  subscribers: "+subs))
		}
	}
	m.scroll = clamp(m.scroll, 0, max(0, len(lines)-h))
	return lines[m.scroll:]
}

// --- runs ---

func (m *Model) runsBody(h int) []string {
	if m.o.RunsDir == "" {
		return []string{m.st.dim.Render("No agent-runs data.")}
	}
	out := []string{m.st.dim.Render("Supervised runs (newest first) and their open questions")}
	if len(m.runs) == 0 {
		return append(out, m.st.dim.Render("  (no runs)"))
	}
	start := max(0, m.sel-(h-2))
	for i := start; i < len(m.runs) && len(out) < h; i++ {
		row := m.runs[i]
		mark := " "
		if i == m.sel {
			mark = "▸"
		}
		var line string
		if row.q == nil {
			r := row.run
			state := r.State
			if r.Stall != nil && !r.Finished() {
				state = "stuck" // its --on-stuck ladder: agent-runs status
			}
			line = fmt.Sprintf("%s %-8s %-14s %-10s %s · %s", mark, r.ID, cut(r.Agent, 14), state, cut(r.ChildSession, 28), ago(r.CreatedAt))
		} else {
			q := row.q
			line = fmt.Sprintf("%s   ? %s %s: %s", mark, q.ID, q.State, oneLine(runs.Preview(q.Message, 200)))
			if i != m.sel {
				line = m.st.ask.Render(line)
			}
		}
		if i == m.sel {
			line = m.st.selected.Render(line)
		}
		out = append(out, line)
	}
	return out
}

func ago(t time.Time) string { return render.Ago(&t) }

// --- compose ---

func (m *Model) composeBody(h int) ([]string, *tea.Cursor) {
	c := m.compose
	var out []string
	if c.runID != "" {
		out = append(out, m.st.header.Render(fmt.Sprintf("Answer question %s of run %s (to %s)", c.qid, c.runID, c.toName)))
		out = append(out, m.st.dim.Render("Q: "+oneLine(c.replyText)))
	} else {
		send, ask := " Send ", " Request Reply "
		if c.ask {
			ask = m.st.mode.Render("[Request Reply]")
		} else {
			send = m.st.mode.Render("[Send]")
		}
		if c.replyTo != "" {
			send, ask = m.st.mode.Render("[Reply]"), ""
		}
		out = append(out, m.st.header.Render("To "+c.toName)+"  mode: "+send+ask+m.st.dim.Render("  (tab toggles)"))
		if c.replyTo != "" {
			out = append(out, m.st.ask.Render("Replying to: "+oneLine(c.replyText)))
		} else {
			out = append(out, "")
		}
	}
	taTop := len(out)
	c.ta.SetHeight(max(3, h-len(out)-3))
	out = append(out, strings.Split(c.ta.View(), "\n")...)
	var atts []string
	for _, a := range c.atts {
		atts = append(atts, fmt.Sprintf("%s (%d B)", a.Name, len(a.Content)))
	}
	if len(atts) > 0 {
		out = append(out, "Attachments: "+strings.Join(atts, ", "))
	} else {
		out = append(out, m.st.dim.Render("No attachments (ctrl+a adds a file)"))
	}
	var cur *tea.Cursor
	if c.attaching {
		out = append(out, c.path.View())
		if cur = c.path.Cursor(); cur != nil {
			cur.Position.Y += len(out) - 1
		}
	} else if cur = c.ta.Cursor(); cur != nil {
		cur.Position.Y += taTop
	}
	if c.sending {
		out = append(out, m.st.dim.Render("sending…"))
	}
	return out, cur
}
