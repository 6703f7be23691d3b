// Package ui is `intercom ui`: a Bubble Tea terminal UI for a person driving
// several agent sessions. It holds a session of its own, lists the other
// sessions (live), composes messages and asks, keeps per-peer conversations
// with unread counts and unanswered asks highlighted, and shows topic state
// and supervised runs.
package ui

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

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
	viewHeld // held.go
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
	holds      map[string][]string // session -> reserved paths
	runs       []runRow
	held       []wire.HeldMessage // held for a person's decision (held.go)
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
		holds    map[string][]string // session -> reserved paths (reservations.go)
		held     []wire.HeldMessage
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
	case decidedMsg:
		return m, m.decided(msg)
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

func clamp(v, lo, hi int) int {
	if hi < lo {
		return lo
	}
	return min(max(v, lo), hi)
}
