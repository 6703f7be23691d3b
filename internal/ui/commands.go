package ui

// The commands that talk to the broker (and read the runs) in the
// background, and what their results change.

import (
	"context"
	"sort"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/intercom-dev/intercom/internal/reservations"
	"github.com/intercom-dev/intercom/internal/runs"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// tickCmd schedules the next list refresh.
func (m *Model) tickCmd() tea.Cmd {
	return tea.Tick(m.o.Refresh, func(time.Time) tea.Msg { return tickMsg{} })
}

// waitCmd delivers the next message pushed to the UI's session.
func (m *Model) waitCmd() tea.Cmd {
	ch, ctx := m.o.Session.Messages(), m.ctx
	return func() tea.Msg {
		select {
		case msg := <-ch:
			return incomingMsg{msg}
		case <-ctx.Done():
			return closedMsg{}
		}
	}
}

func (m *Model) refreshCmd() tea.Cmd {
	c, self, scope, cwd, dir := m.o.Client, m.self.ID, "project", m.o.Cwd, m.o.RunsDir
	if m.scopeAll {
		scope = "all"
	}
	ctx := m.ctx
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		var r refreshMsg
		r.sessions, r.err = c.List(ctx, intercom.ListOptions{Self: self, Scope: scope, Cwd: cwd})
		if r.err != nil {
			return r
		}
		if r.pending, r.err = c.Pending(ctx, self); r.err != nil {
			return r
		}
		if r.topics, r.err = c.Topics(ctx, ""); r.err != nil {
			return r
		}
		r.holds = reservations.HeldBy(ctx, c, cwd)
		if r.held, r.err = c.Held(ctx, ""); r.err != nil {
			return r
		}
		if dir != "" {
			r.runs = loadRuns(runs.Files{Dir: dir})
		}
		return r
	}
}

func loadRuns(s runs.Files) []runRow {
	rs, err := s.List()
	if err != nil {
		return nil
	}
	var out []runRow
	for _, r := range rs {
		out = append(out, runRow{run: r})
		qs, _ := s.Questions(r.ID)
		for _, q := range qs {
			if q.Unresolved() {
				out = append(out, runRow{run: r, q: q})
			}
		}
	}
	return out
}

func (m *Model) ackCmd(id string) tea.Cmd {
	s, ctx := m.o.Session, m.ctx
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return ackedMsg{s.Ack(ctx, id)}
	}
}

func (m *Model) sendCmd(req wire.SendRequest) tea.Cmd {
	c, ctx := m.o.Client, m.ctx
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		rep, err := c.Send(ctx, req)
		return sentMsg{req: req, reply: rep, err: err}
	}
}

func (m *Model) answerCmd(run, qid, text string) tea.Cmd {
	fn, ctx := m.o.Answer, m.ctx
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		note, err := fn(ctx, run, qid, text)
		return answeredMsg{run: run, qid: qid, note: note, err: err}
	}
}

func (m *Model) applyRefresh(r refreshMsg) {
	if r.err != nil {
		m.lastErr = r.err.Error()
		return
	}
	m.lastErr = ""
	m.holds = r.holds
	var rows []wire.Session
	for _, s := range r.sessions {
		if !s.Self && s.ID != m.self.ID {
			rows = append(rows, s)
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
	m.sessions = rows
	m.sel = clamp(m.sel, 0, len(rows)-1)
	m.pending = map[string]wire.PendingAsk{}
	for _, a := range r.pending {
		m.pending[a.AskID] = a
	}
	m.topics = r.topics
	m.runs = r.runs
	m.held = r.held
	if m.view == viewHeld {
		m.sel = clamp(m.sel, 0, len(m.held)-1)
	}
}
