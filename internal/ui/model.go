// Package ui is `intercom ui`: a Bubble Tea terminal UI for a person driving
// several agent sessions. It holds a session of its own, lists the other
// sessions (live), composes messages and asks, keeps per-peer conversations
// with unread counts and unanswered asks highlighted, and shows topic state
// and supervised runs.
package ui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"charm.land/bubbles/v2/textarea"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/intercom-dev/intercom/internal/bounded"
	"github.com/intercom-dev/intercom/internal/runs"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// AnswerFunc answers a supervised run's question (agent-runs answer).
type AnswerFunc func(ctx context.Context, runID, questionID, text string) (string, error)

// Options configure the model.
type Options struct {
	Client   *intercom.Client
	Session  *intercom.Session // the UI's own held session
	Cwd      string            // project of the session list ("" = current dir)
	Shortcut string            // agents-view key (config "shortcut")
	NoColor  bool
	RunsDir  string        // agent-runs data ("" = no runs view)
	Answer   AnswerFunc    // answers a run question (nil: runs view is read-only)
	Refresh  time.Duration // list refresh period (default 1 s)
	// AskTimeout is how long a Request Reply obligation lives (default 2 min).
	AskTimeout time.Duration
	Width      int // initial size until the terminal reports one (default 80×24)
	Height     int
}

type view int

const (
	viewSessions view = iota
	viewConvos
	viewThread
	viewTopics
	viewRuns
)

// Model is the Bubble Tea model of `intercom ui`.
type Model struct {
	o      Options
	ctx    context.Context
	cancel context.CancelFunc
	st     styles
	self   wire.Session
	w, h   int

	view     view
	prevView view // where the agents-view key returns to

	// data from the broker
	scopeAll   bool
	sessions   []wire.Session
	pending    map[string]wire.PendingAsk // unresolved asks addressed to us, by ask id
	topics     []wire.TopicInfo
	runs       []runRow
	refreshing bool
	lastErr    string

	// conversations
	convos  map[string]*convo // by peer session id
	order   []string          // peer ids, most recent first
	peerSel int
	expand  bool // attachments expanded in the thread view
	scroll  int  // thread/topics scroll offset from the bottom/top

	sel    int // sessions / runs cursor
	status string
	isErr  bool

	compose *compose
}

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

// compose is the compose overlay state.
type compose struct {
	to        string // target session id
	toName    string
	ask       bool   // Request Reply mode
	replyTo   string // ask id when replying
	replyText string
	runID     string // answering a run question
	qid       string
	ta        textarea.Model
	atts      []wire.Attachment
	attaching bool
	path      textinput.Model
	sending   bool
}

type runRow struct {
	run *runs.Run
	q   *runs.Question // nil for the run's own row
}

// messages
type (
	tickMsg    struct{}
	refreshMsg struct {
		sessions []wire.Session
		pending  []wire.PendingAsk
		topics   []wire.TopicInfo
		runs     []runRow
		err      error
	}
	incomingMsg struct{ m wire.Message }
	sentMsg     struct {
		req   wire.SendRequest
		reply wire.SendReply
		err   error
	}
	answeredMsg struct {
		run, qid, note string
		err            error
	}
	ackedMsg  struct{ err error }
	closedMsg struct{}
)

// New builds the model around a held session.
func New(o Options) *Model {
	if o.Refresh <= 0 {
		o.Refresh = time.Second
	}
	if o.AskTimeout <= 0 {
		o.AskTimeout = 2 * time.Minute
	}
	if o.Shortcut == "" {
		o.Shortcut = "alt+shift+m"
	}
	if o.Width <= 0 {
		o.Width = 80
	}
	if o.Height <= 0 {
		o.Height = 24
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Model{
		o: o, ctx: ctx, cancel: cancel, st: newStyles(o.NoColor), self: o.Session.Info(),
		w: o.Width, h: o.Height, pending: map[string]wire.PendingAsk{}, convos: map[string]*convo{},
	}
}

// Close stops the model's background commands.
func (m *Model) Close() { m.cancel() }

// Init starts the refresh loop and the message pump.
func (m *Model) Init() tea.Cmd {
	m.refreshing = true
	return tea.Batch(m.refreshCmd(), m.tickCmd(), m.waitCmd())
}

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
		if dir != "" {
			r.runs = loadRuns(runs.Store{Dir: dir})
		}
		return r
	}
}

func loadRuns(s runs.Store) []runRow {
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

// Update handles one message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
		if m.compose != nil {
			m.sizeCompose()
		}
		return m, nil
	case tickMsg:
		cmds := []tea.Cmd{m.tickCmd()}
		if !m.refreshing {
			m.refreshing = true
			cmds = append(cmds, m.refreshCmd())
		}
		return m, tea.Batch(cmds...)
	case refreshMsg:
		m.refreshing = false
		m.applyRefresh(msg)
		return m, nil
	case incomingMsg:
		m.receive(msg.m)
		cmds := []tea.Cmd{m.waitCmd(), m.ackCmd(msg.m.ID)}
		if !m.refreshing {
			m.refreshing = true
			cmds = append(cmds, m.refreshCmd())
		}
		return m, tea.Batch(cmds...)
	case ackedMsg:
		if msg.err != nil && m.ctx.Err() == nil {
			m.flash(true, "ack not confirmed yet (retried until it is): %v", msg.err)
		}
		return m, nil
	case sentMsg:
		return m, m.sent(msg)
	case answeredMsg:
		if m.compose != nil {
			m.compose.sending = false
		}
		if msg.err != nil {
			m.flash(true, "answer %s/%s: %v", msg.run, msg.qid, msg.err)
			return m, nil
		}
		m.compose = nil
		m.flash(false, "Answered question %s of run %s. %s", msg.qid, msg.run, msg.note)
		m.refreshing = true
		return m, m.refreshCmd()
	case closedMsg:
		return m, nil
	case tea.PasteMsg:
		if m.compose != nil {
			return m, m.updateCompose(msg)
		}
		return m, nil
	case tea.KeyPressMsg:
		return m, m.key(msg)
	}
	if m.compose != nil {
		return m, m.updateCompose(msg)
	}
	return m, nil
}

func (m *Model) flash(isErr bool, format string, a ...any) {
	m.status = strings.ReplaceAll(fmt.Sprintf(format, a...), "\n", " ")
	m.isErr = isErr
}

func (m *Model) applyRefresh(r refreshMsg) {
	if r.err != nil {
		m.lastErr = r.err.Error()
		return
	}
	m.lastErr = ""
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

// --- keys ---

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

func (m *Model) openCompose(to, name, replyTo, replyText string) tea.Cmd {
	ta := textarea.New()
	ta.ShowLineNumbers = false
	ta.Prompt = "│ "
	ta.Placeholder = "Message…"
	ta.SetVirtualCursor(false)
	ta.KeyMap.InsertNewline.SetKeys("alt+enter", "ctrl+j", "shift+enter")
	if m.o.NoColor {
		ta.SetStyles(plainTextareaStyles())
	}
	pi := textinput.New()
	pi.Prompt = "Attach file: "
	pi.SetVirtualCursor(false)
	if m.o.NoColor {
		pi.SetStyles(plainTextinputStyles())
	}
	m.compose = &compose{to: to, toName: name, replyTo: replyTo, replyText: replyText, ta: ta, path: pi}
	m.sizeCompose()
	m.status = ""
	return m.compose.ta.Focus()
}

func (m *Model) sizeCompose() {
	c := m.compose
	c.ta.SetWidth(max(10, m.w-2))
	c.ta.SetHeight(max(3, m.h-10))
	c.path.SetWidth(max(10, m.w-16))
}

func (m *Model) composeKey(k tea.KeyPressMsg) tea.Cmd {
	c := m.compose
	if c.sending {
		return nil
	}
	if c.attaching {
		switch {
		case is(k, "esc"):
			c.attaching = false
			c.path.Blur()
			c.path.SetValue("")
			return c.ta.Focus()
		case is(k, "enter"):
			if err := c.attach(c.path.Value()); err != nil {
				m.flash(true, "%v", err)
				return nil
			}
			m.flash(false, "Attached %s", c.atts[len(c.atts)-1].Name)
			c.attaching = false
			c.path.Blur()
			c.path.SetValue("")
			return c.ta.Focus()
		}
		var cmd tea.Cmd
		c.path, cmd = c.path.Update(k)
		return cmd
	}
	switch {
	case is(k, "esc"):
		m.compose = nil
		m.flash(false, "Cancelled")
		return nil
	case is(k, "tab"):
		if c.replyTo == "" && c.runID == "" {
			c.ask = !c.ask
		}
		return nil
	case is(k, "ctrl+a"):
		c.attaching = true
		c.ta.Blur()
		return c.path.Focus()
	case is(k, "enter", "ctrl+s"):
		return m.submit()
	}
	var cmd tea.Cmd
	c.ta, cmd = c.ta.Update(k)
	return cmd
}

func (m *Model) updateCompose(msg tea.Msg) tea.Cmd {
	c := m.compose
	var cmd tea.Cmd
	if c.attaching {
		c.path, cmd = c.path.Update(msg)
	} else {
		c.ta, cmd = c.ta.Update(msg)
	}
	return cmd
}

func (m *Model) submit() tea.Cmd {
	c := m.compose
	text := c.ta.Value()
	if strings.TrimSpace(text) == "" && len(c.atts) == 0 {
		m.flash(true, "message is empty")
		return nil
	}
	c.sending = true
	if c.runID != "" {
		return m.answerCmd(c.runID, c.qid, text)
	}
	return m.sendCmd(wire.SendRequest{
		From: m.self.ID, To: c.to, Text: text, ExpectsReply: c.ask && c.replyTo == "",
		ReplyTo: c.replyTo, Attachments: c.atts, TimeoutMs: m.o.AskTimeout.Milliseconds(),
	})
}

// attach reads a file into an attachment.
func (c *compose) attach(p string) error {
	p = strings.TrimSpace(p)
	if p == "" {
		return errors.New("no path given")
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(h, p[1:])
		}
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return fmt.Errorf("attach: %w", err)
	}
	if fi.IsDir() {
		return fmt.Errorf("attach: %s is a directory", p)
	}
	data, err := bounded.ReadFile(abs, p, wire.MaxMessageBytes)
	if err != nil {
		return fmt.Errorf("attach: %w", err)
	}
	c.atts = append(c.atts, wire.Attachment{Type: "file", Name: filepath.Base(abs), Path: abs, Content: string(data)})
	return nil
}

func clamp(v, lo, hi int) int {
	if hi < lo {
		return lo
	}
	return min(max(v, lo), hi)
}
