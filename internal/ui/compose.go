package ui

// The compose overlay: writing a message, an ask, a reply or a run answer,
// with file attachments.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"charm.land/bubbles/v2/textarea"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/intercom-dev/intercom/internal/bounded"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

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
	req := wire.SendRequest{From: m.self.ID, To: c.to, Text: text, ExpectsReply: c.ask, Attachments: c.atts}
	if c.replyTo != "" {
		req = intercom.ReplyRequest(m.self.ID, c.to, c.replyTo, text, c.atts)
	}
	req.TimeoutMs = m.o.AskTimeout.Milliseconds()
	return m.sendCmd(req)
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
