package ui

// What each key does in each view (the key names are in keys.go).

import (
	tea "charm.land/bubbletea/v2"
)

// key handles a key press: the global keys, then the current view's.
func (m *Model) key(k tea.KeyPressMsg) tea.Cmd {
	if is(k, "ctrl+c") {
		return tea.Quit
	}
	if m.compose != nil {
		return m.composeKey(k)
	}
	if is(k, m.o.Shortcut) {
		if m.view == viewConvos || m.view == viewThread {
			m.view = m.prevView
		} else {
			m.prevView = m.view
			m.view = viewConvos
		}
		return nil
	}
	switch {
	case is(k, "q"):
		return tea.Quit
	case is(k, "1", "s"):
		m.view = viewSessions
		return nil
	case is(k, "2", "c"):
		if m.view != viewConvos && m.view != viewThread {
			m.prevView = m.view
		}
		m.view = viewConvos
		return nil
	case is(k, "3", "t"):
		m.view, m.scroll = viewTopics, 0
		return nil
	case is(k, "4", "u"):
		m.view = viewRuns
		m.sel = clamp(m.sel, 0, len(m.runs)-1)
		return nil
	case is(k, "5"):
		m.view = viewHeld
		m.sel = clamp(m.sel, 0, len(m.held)-1)
		return nil
	}
	switch m.view {
	case viewSessions:
		return m.sessionsKey(k)
	case viewConvos:
		return m.convosKey(k)
	case viewThread:
		return m.threadKey(k)
	case viewTopics:
		switch {
		case is(k, "up", "k"):
			m.scroll = max(0, m.scroll-1)
		case is(k, "down", "j"):
			m.scroll++
		case is(k, "esc"):
			m.view = viewSessions
		}
	case viewRuns:
		return m.runsKey(k)
	case viewHeld:
		return m.heldKey(k)
	}
	return nil
}

func (m *Model) sessionsKey(k tea.KeyPressMsg) tea.Cmd {
	switch {
	case is(k, "up", "k"):
		m.sel = clamp(m.sel-1, 0, len(m.sessions)-1)
	case is(k, "down", "j"):
		m.sel = clamp(m.sel+1, 0, len(m.sessions)-1)
	case is(k, "a"):
		m.scopeAll = !m.scopeAll
		m.sel = 0
		if !m.refreshing {
			m.refreshing = true
			return m.refreshCmd()
		}
	case is(k, "enter"):
		if m.sel < len(m.sessions) {
			s := m.sessions[m.sel]
			return m.openCompose(s.ID, s.Target, "", "")
		}
	case is(k, "r"):
		if m.sel < len(m.sessions) {
			return m.reply(m.sessions[m.sel].ID, m.sessions[m.sel].Target)
		}
	}
	return nil
}

func (m *Model) convosKey(k tea.KeyPressMsg) tea.Cmd {
	switch {
	case is(k, "up", "k"):
		m.peerSel = clamp(m.peerSel-1, 0, len(m.order)-1)
	case is(k, "down", "j"):
		m.peerSel = clamp(m.peerSel+1, 0, len(m.order)-1)
	case is(k, "enter"):
		if p := m.currentPeer(); p != "" {
			m.view, m.scroll = viewThread, 0
			m.convos[p].unread = 0
		}
	case is(k, "r"):
		if p := m.currentPeer(); p != "" {
			return m.reply(p, m.convos[p].peer.Name)
		}
	case is(k, "esc"):
		m.view = m.prevView
	}
	return nil
}

func (m *Model) threadKey(k tea.KeyPressMsg) tea.Cmd {
	p := m.currentPeer()
	switch {
	case is(k, "esc"):
		m.view = viewConvos
	case is(k, "up", "k"):
		m.scroll++
	case is(k, "down", "j"):
		m.scroll = max(0, m.scroll-1)
	case is(k, "x"):
		m.expand = !m.expand
	case is(k, "r"):
		if p != "" {
			return m.reply(p, m.convos[p].peer.Name)
		}
	case is(k, "enter"):
		if p != "" {
			return m.openCompose(p, m.convos[p].peer.Name, "", "")
		}
	}
	return nil
}

func (m *Model) runsKey(k tea.KeyPressMsg) tea.Cmd {
	switch {
	case is(k, "up", "k"):
		m.sel = clamp(m.sel-1, 0, len(m.runs)-1)
	case is(k, "down", "j"):
		m.sel = clamp(m.sel+1, 0, len(m.runs)-1)
	case is(k, "esc"):
		m.view = viewSessions
	case is(k, "enter", "r"):
		if m.sel >= len(m.runs) {
			return nil
		}
		row := m.runs[m.sel]
		if row.q == nil {
			m.flash(true, "select an open question (the indented rows) to answer it")
			return nil
		}
		if m.o.Answer == nil {
			m.flash(true, "answering needs agent-runs")
			return nil
		}
		cmd := m.openCompose(row.run.ChildSessionID, row.run.ChildSession, "", "")
		m.compose.runID, m.compose.qid = row.run.ID, row.q.ID
		m.compose.replyText = row.q.Message
		return cmd
	}
	return nil
}

// reply opens compose answering the newest unanswered ask from peer, or a
// plain message when there is none.
func (m *Model) reply(peer, name string) tea.Cmd {
	ask, ok := m.unansweredFrom(peer)
	if !ok {
		m.flash(false, "No unanswered ask from %s: composing a message instead", name)
		return m.openCompose(peer, name, "", "")
	}
	return m.openCompose(peer, name, ask.ID, ask.Text)
}
